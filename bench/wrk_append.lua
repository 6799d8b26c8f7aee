-- S1 under wrk: each request appends one event to the next session of this thread's ring.
-- Arguments (after --): a file of session paths, one per line; a file holding the event body
-- with @ID@ where each request's unique event id goes and @TS@ where its timestamp goes; the
-- number of wrk threads; the first timestamp (epoch seconds). Timestamps grow by 0.1 ms per
-- request, as a live session's do: each append moves the session's update time.
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
  template = file:read("*a")
  file:close()
  paths = {}
  first_timestamp = tonumber(args[4])
  run = args[4]  -- in the ids too: S7 appends to the same sessions run after run
  for i = 1, #lines do
    if (i - 1) % tonumber(args[3]) == index then table.insert(paths, lines[i] .. "/events") end
  end
  sent = 0
  headers = {["Content-Type"] = "application/json"}
end

function request()
  sent = sent + 1
  local path = paths[(sent - 1) % #paths + 1]
  local body = template:gsub("@ID@", "w" .. run .. "-" .. index .. "-" .. sent, 1)
  body = body:gsub("@TS@", string.format("%.4f", first_timestamp + sent / 10000), 1)
  return wrk.format("POST", path, headers, body)
end

function done(summary, latency, requests)
  io.write(string.format(
    '{"requests": %d, "duration_us": %d, "status_errors": %d, "socket_errors": %d, ' ..
    '"p50_us": %d, "p99_us": %d}\n',
    summary.requests, summary.duration, summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    latency:percentile(50), latency:percentile(99)))
end
