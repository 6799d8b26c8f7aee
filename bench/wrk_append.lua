-- S1 under wrk: each request appends one event to the next session of this thread's ring.
-- Arguments (after --): a file of session paths, one per line, and a file holding the event
-- body with @ID@ where each request's unique event id goes.
-- A thread's ring holds more sessions than it has connections in flight, so no two requests
-- ever append to the same session at once, as in the Python generator's S1.

local threads = {}
local count = 0

function setup(thread)
  thread:set("index", count)
  count = count + 1
  table.insert(threads, thread)
end

function init(args)
  local lines = {}
  for line in io.lines(args[1]) do table.insert(lines, line) end
  local file = io.open(args[2], "rb")
  local template = file:read("*a")
  file:close()
  local mark = template:find("@ID@", 1, true)
  head, tail = template:sub(1, mark - 1), template:sub(mark + 4)
  paths = {}
  for i = 1, #lines do
    if (i - 1) % tonumber(args[3]) == index then table.insert(paths, lines[i] .. "/events") end
  end
  sent = 0
  headers = {["Content-Type"] = "application/json"}
end

function request()
  sent = sent + 1
  local path = paths[(sent - 1) % #paths + 1]
  return wrk.format("POST", path, headers, head .. "w" .. index .. "-" .. sent .. tail)
end

function done(summary, latency, requests)
  io.write(string.format(
    '{"requests": %d, "duration_us": %d, "status_errors": %d, "socket_errors": %d, ' ..
    '"p50_us": %d, "p99_us": %d}\n',
    summary.requests, summary.duration, summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    latency:percentile(50), latency:percentile(99)))
end
