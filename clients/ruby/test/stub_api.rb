# frozen_string_literal: true

require "json"
require "securerandom"
require "socket"
require "uri"

# A stub of Sessionary's API in the test's own process, on the standard library alone (a
# TCPServer, a thread per keep-alive connection): each test says what a route answers, and the
# stub sends it as the real API would, with its Content-Type (JSON, or problem+json for an
# error), its Content-Length and an X-Request-ID (the request's own, else a new one). It
# records every request, so that a test checks what the client sent as well as what it made
# of the answer. A route nobody set answers the API's 404 `not_found`.
#
# Each JSON answer is checked against the committed spec (openapi/openapi.json): the
# operation of its method and path must answer that status, with every field its schema
# requires, of its type. `mismatches` lists those that did not, so that a stub cannot drift
# from the API it stands for. Text answers (a stream, an export, a download, a proxy's page) are
# sent as they are; of the spec's own paths, only their status is checked.
class StubAPI
  SPEC = JSON.parse(File.read(File.expand_path("../../../openapi/openapi.json", __dir__)))
  # Each operation's method and path, as a pattern of the path as sent (ids percent-encoded; an
  # artifact's name, its `/`s kept, of segments), in the spec's order, which names an artifact's
  # versions before the artifact.
  OPERATIONS = SPEC["paths"].flat_map do |template, operations|
    pattern = Regexp.new("\\A#{template.gsub('{name}', '.+').gsub(/\{\w+\}/, '[^/:]+')}\\z")
    operations.filter_map { |method, operation| [method.upcase, pattern, operation] if operation.is_a?(Hash) }
  end.freeze
  # A request as the stub received it: its path as sent (percent-encoded, without the query),
  # its query (a value per name, an Array for a repeated one), its headers by lower-case name
  # and its body (as sent, or chunked: its chunks joined).
  Request = Struct.new(:method, :path, :query, :headers, :body, keyword_init: true) do
    def json = JSON.parse(body)
  end

  # A session as the API answers it: its fields, `fields` (camelCase) over them.
  def self.session(id, app: "app", user: "ada", **fields)
    {
      "id" => id, "appName" => app, "userId" => user, "state" => {}, "events" => [],
      "lastUpdateTime" => 1_795_000_000.5, "createTime" => 1_795_000_000.5, "version" => 0,
      "kind" => "root", "parent" => nil, "status" => "open", "outcome" => nil,
      "usage" => {"promptTokenCount" => 0, "candidatesTokenCount" => 0, "totalTokenCount" => 0},
      "displayName" => nil, "labels" => {}, "expireTime" => nil
    }.merge(fields.transform_keys(&:to_s))
  end

  # An event as stored, at `seq`.
  def self.event(seq, **fields)
    {"id" => "e#{seq}", "author" => "user", "timestamp" => 1_795_000_000.0 + seq, "seq" => seq}
      .merge(fields.transform_keys(&:to_s))
  end

  # An error answer's RFC 9457 body, as the API's one handler writes it.
  def self.problem(status, code, detail = code, **fields)
    {"type" => "urn:sessionary:problem:#{code}", "title" => code.tr("_", " ").capitalize,
     "status" => status, "detail" => detail, "code" => code}.merge(fields.transform_keys(&:to_s))
  end

  attr_reader :mismatches

  def initialize
    @routes = {}
    @requests = []
    @mismatches = []
    @threads = []
    @lock = Mutex.new
    @listener = TCPServer.new("127.0.0.1", 0)
    @acceptor = Thread.new do
      loop do
        socket = @listener.accept
        @lock.synchronize { @threads << Thread.new { serve(socket) } }
      end
    end
  end

  def url = "http://127.0.0.1:#{@listener.addr[1]}"

  # How many connections the stub accepted.
  def connections = @lock.synchronize { @threads.size }

  # Answers `method path` with `status`, `body` (sent as JSON unless it is a String) and
  # `headers`; or, with a block, with what the block returns for each request, given the
  # request and its number among this route's (from 1): `[status, body, headers]`, or nil to
  # close the connection without an answer (an answer lost on the way).
  def on(method, path, status = 200, body = nil, headers = {}, &answer)
    answer ||= ->(_request, _n) { [status, body, headers] }
    @lock.synchronize { @routes["#{method} #{path}"] = [answer, 0] }
    self
  end

  # The requests received so far, in order; with a path, those to it.
  def requests(path = nil)
    all = @lock.synchronize { @requests.dup }
    path ? all.select { |request| request.path == path } : all
  end

  def close
    @acceptor.kill
    @listener.close
    @lock.synchronize { @threads.each(&:kill) }
  end

  private

  def serve(socket)
    while (head = socket.gets("\r\n\r\n"))
      request = parse(head, socket)
      answer = respond(request)
      break if answer.nil?

      socket.write(answer)
    end
  rescue IOError, SystemCallError
    nil
  ensure
    socket.close
  end

  def parse(head, socket)
    line, *fields = head.split("\r\n")
    method, target = line.split(" ")
    headers = fields.to_h { |field| field.split(/: */, 2).then { |name, value| [name.downcase, value] } }
    path, query = target.split("?", 2)
    pairs = URI.decode_www_form(query.to_s).group_by(&:first).transform_values { |values| values.map(&:last) }
    body = headers["transfer-encoding"] == "chunked" ? chunked(socket) : socket.read(headers.fetch("content-length", "0").to_i)
    Request.new(method: method, path: path, headers: headers,
                query: pairs.transform_values { |values| values.size == 1 ? values.first : values }, body: body)
  end

  # A chunked body, its chunks joined (a size in hex, a line, its bytes, a line; size 0 ends it).
  def chunked(socket)
    body = String.new(encoding: Encoding::BINARY)
    while (size = socket.gets("\r\n").to_i(16)).positive?
      body << socket.read(size)
      socket.read(2)
    end
    socket.gets("\r\n") # the line after the last chunk (no trailers)
    body
  end

  # The bytes that answer `request`, or nil for none.
  def respond(request)
    answer, n = @lock.synchronize do
      @requests << request
      route = @routes["#{request.method} #{request.path}"]
      route && [route[0], route[1] += 1]
    end
    status, body, headers = answer ? answer.call(request, n) : [404, StubAPI.problem(404, "not_found", "Not Found")]
    return nil if status.nil?

    check(request, status, body)
    render(status, body, {"X-Request-ID" => request.headers["x-request-id"] || SecureRandom.hex(16)}
                           .merge(headers || {}))
  end

  # Notes where an answer is not one the spec gives for the request's operation. Any
  # operation may answer an error the spec lists for others (a 503 while the database is down):
  # a problem.
  # A text answer is sent as it is (one under a path of no operation too: a proxy's), its
  # status alone checked.
  def check(request, status, body)
    _, _, operation = OPERATIONS.find { |method, pattern, _| method == request.method && pattern.match?(request.path) }
    return if operation.nil? && body.is_a?(String)
    return note(["no operation of the spec is #{request.method} #{request.path}"]) if operation.nil?

    name = "#{operation['operationId']} #{status}"
    answer = operation["responses"][status.to_s]
    return note(["#{name}: the operation has no such answer"]) if answer.nil? && status < 400
    return if body.is_a?(String)

    schema = answer ? answer.fetch("content", {}).values.first&.fetch("schema") : {"$ref" => "#/components/schemas/Problem"}
    return note(body.nil? ? [] : ["#{name}: the answer has no body"]) if schema.nil?

    note(StubAPI.mismatches(schema, body, name))
  end

  def note(mismatches) = @lock.synchronize { @mismatches.concat(mismatches) }

  # Where `value` lacks what `schema` asks: a required field, a type, one of an enum's values;
  # the spec's $refs followed, any one of `anyOf` or `oneOf` enough.
  def self.mismatches(schema, value, where)
    schema = SPEC.dig(*schema["$ref"].delete_prefix("#/").split("/")) while schema.key?("$ref")
    if (choices = schema["anyOf"] || schema["oneOf"])
      found = choices.map { |choice| mismatches(choice, value, where) }
      return found.find(&:empty?) || found.min_by(&:size)
    end
    return ["#{where}: #{value.inspect} is none of #{schema['enum']}"] if schema["enum"] && !schema["enum"].include?(value)

    type = {Hash => "object", Array => "array", String => "string", Integer => "integer", Float => "number",
            TrueClass => "boolean", FalseClass => "boolean", NilClass => "null"}.fetch(value.class)
    expected = schema["type"]
    unless expected.nil? || expected == type || (expected == "number" && type == "integer")
      return ["#{where}: #{type}, not #{expected}"]
    end

    case value
    when Hash
      missing = (schema["required"] || []) - value.keys
      fields = value.flat_map do |key, item|
        field = schema.dig("properties", key)
        field ? mismatches(field, item, "#{where}.#{key}") : []
      end
      missing.map { |key| "#{where}.#{key}: missing" } + fields
    when Array
      value.each_with_index.flat_map { |item, n| mismatches(schema.fetch("items", {}), item, "#{where}[#{n}]") }
    else []
    end
  end

  def render(status, body, headers)
    unless body.nil? || body.is_a?(String)
      headers = {"Content-Type" => status >= 400 ? "application/problem+json" : "application/json"}.merge(headers)
      body = JSON.generate(body)
    end
    body = body.to_s.b
    lines = headers.merge("Content-Length" => body.bytesize).map { |name, value| "#{name}: #{value}\r\n" }
    "HTTP/1.1 #{status}\r\n#{lines.join}\r\n" + body
  end
end
