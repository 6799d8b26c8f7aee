# frozen_string_literal: true

require "net/http"
require "openssl"
require "time"
require "uri"

module Sessionary
  # Sends requests over a pool of keep-alive Net::HTTP connections, shared by threads, and
  # sends them again when that is safe, after the server's Retry-After when it gives one.
  class Transport
    # The request never left: sending it again cannot do anything twice, whatever it is.
    NOT_SENT = [
      Errno::ECONNREFUSED, Errno::EHOSTUNREACH, Errno::ENETUNREACH, Errno::EADDRNOTAVAIL,
      SocketError, Net::OpenTimeout
    ].freeze
    # No answer came: the request may have been done, or not.
    LOST = [
      *NOT_SENT, EOFError, IOError, Errno::ECONNRESET, Errno::ECONNABORTED, Errno::EPIPE,
      Errno::ETIMEDOUT, Net::ReadTimeout, Net::WriteTimeout, OpenSSL::SSL::SSLError
    ].freeze
    TIMEOUTS = [Net::OpenTimeout, Net::ReadTimeout, Net::WriteTimeout].freeze
    # The server, or a proxy in front of it, could not serve the request right now.
    TRANSIENT = [429, 502, 503, 504].freeze
    # 503s that the same request would meet again: a search too costly for the server's limit.
    LASTING = ["search_timeout"].freeze
    # The most a resend waits for what Retry-After asks: a longer wait is cut to it, and the
    # request sent again then, rather than a caller kept waiting for an hour a proxy asked for.
    MAX_RETRY_AFTER = 60
    # What `request_options:` may hold, for one call: its `timeout` (seconds, in place of the
    # client's), `headers` (over the client's) and `max_retries` (in place of `retries`).
    REQUEST_OPTIONS = %i[timeout headers max_retries].freeze
    METHODS = {
      "GET" => Net::HTTP::Get, "POST" => Net::HTTP::Post, "PATCH" => Net::HTTP::Patch,
      "DELETE" => Net::HTTP::Delete
    }.freeze

    attr_reader :retries

    def initialize(base_url:, headers:, timeout:, retries:, backoff:, pool_size:)
      @base = URI(base_url)
      @prefix = @base.path.chomp("/")
      @headers = {"Accept" => "application/json", "User-Agent" => "sessionary-ruby/#{VERSION}"}
                 .merge(headers)
      @timeout = timeout
      @retries = retries
      @backoff = backoff
      @pool_size = pool_size
      @idle = []
      @lock = Mutex.new
    end

    # The successful answer (a Net::HTTPResponse), after the resends allowed; an error answer
    # is raised as its APIError, no answer as an APIConnectionError. `idempotent`: sending the
    # request twice has the effect of sending it once, so it is resent after a lost answer
    # too, not only when it never left. `options`: the call's (REQUEST_OPTIONS).
    def request(method, path, query: nil, body: nil, headers: {}, idempotent: false, options: {})
      target = @prefix + path + (query.nil? || query.empty? ? "" : "?#{URI.encode_www_form(query)}")
      body = Transport.encode(body) unless body.nil?
      timeout = options.fetch(:timeout, @timeout)
      attempt = 0
      loop do
        outcome = begin
          request = build(method, target, body, headers, options)
          response = with_connection(timeout) { |http| http.request(request) }
          response.is_a?(Net::HTTPSuccess) ? response : Sessionary.error_for(response)
        rescue *LOST => e
          e
        end
        wait = delay(idempotent, attempt, outcome, options.fetch(:max_retries, @retries))
        return answer(outcome, request_id(options)) if wait.nil?

        sleep(wait)
        attempt += 1
      end
    end

    # Opens a stream on a connection of its own and yields its body's chunks as they come;
    # `idle` seconds without a byte is a Net::ReadTimeout. An error answer is returned, not
    # raised, so that the caller tells it from an error of its own block.
    def stream(path, headers, idle:, options: {})
      http = connect(options.fetch(:timeout, @timeout), read_timeout: idle)
      request = build("GET", @prefix + path, nil, {"Accept" => "text/event-stream", **headers}, options)
      http.request(request) do |response|
        return Sessionary.error_for(response) unless response.is_a?(Net::HTTPSuccess)

        response.read_body { |chunk| yield chunk }
      end
      nil
    ensure
      http&.finish if http&.started?
    end

    # How long to wait before resending, after attempt `attempt` (from 0) ended in `outcome`
    # (a successful answer, an APIError or no answer); nil to give up with it, or to keep it.
    def delay(idempotent, attempt, outcome, retries = @retries)
      return nil if attempt >= retries || !outcome.is_a?(Exception)

      if outcome.is_a?(APIError)
        return nil unless idempotent && TRANSIENT.include?(outcome.status) && !LASTING.include?(outcome.code)

        asked = Transport.retry_after(outcome.headers["retry-after"])
        return asked unless asked.nil?
      elsif !(idempotent || NOT_SENT.any? { |kind| outcome.is_a?(kind) })
        return nil
      end
      # Full jitter, so that clients that failed together do not come back together.
      rand * [5.0, @backoff * (2**attempt)].min
    end

    # The X-Request-ID a call is sent with (its own, else the client's), if any.
    def request_id(options)
      sent = @headers.merge(options.fetch(:headers, {}))
      sent.reverse_each.find { |name, _| name.to_s.casecmp?("X-Request-ID") }&.last
    end

    def close
      @lock.synchronize { @idle.pop.finish while @idle.any? }
    end

    # The seconds a Retry-After asks to wait (seconds, or an HTTP date), at most
    # MAX_RETRY_AFTER; nil when it asks none that can be read, and the client's backoff is
    # waited.
    def self.retry_after(value)
      text = value.to_s.strip
      wait = text.match?(/\A\d+(\.\d+)?\z/) ? Float(text) : Time.httpdate(text) - Time.now
      wait.clamp(0, MAX_RETRY_AFTER)
    rescue ArgumentError # neither
      nil
    end

    # A body as it is sent: JSON, unless it is text already (an import's NDJSON). One with a
    # string that is not valid UTF-8 is refused, as the server would refuse it.
    def self.encode(body)
      raise Sessionary.refused("strings must be valid UTF-8", "body") unless Sessionary.utf8?(body)

      body.is_a?(String) ? body : JSON.generate(body)
    end

    private

    def answer(outcome, request_id)
      case outcome
      when APIError then raise outcome
      when Exception
        kind = TIMEOUTS.any? { |timeout| outcome.is_a?(timeout) } ? APITimeoutError : APIConnectionError
        raise kind.new("#{outcome.class}: #{outcome.message}", request_id: request_id), cause: outcome
      else outcome
      end
    end

    # The request, with the client's headers, the call's over them, then the operation's own.
    def build(method, target, body, headers, options)
      sent = @headers.merge(options.fetch(:headers, {})).merge(headers)
      request = METHODS.fetch(method).new(target, sent)
      unless body.nil?
        request["Content-Type"] ||= "application/json"
        request.body = body
      end
      request
    end

    # A pooled connection for the block, waiting `timeout` seconds for each read and write;
    # one that failed is closed, not given back.
    def with_connection(timeout)
      http = @lock.synchronize { @idle.pop } || connect(timeout)
      http.read_timeout = http.write_timeout = timeout # the call's, on a connection of another's
      result = yield http
      kept = @lock.synchronize { @idle.size < @pool_size && @idle.push(http) }
      http.finish unless kept
      result
    rescue Exception # any way out, an interrupt too: the connection may be mid-answer
      http.finish if http&.started?
      raise
    end

    def connect(timeout, read_timeout: timeout)
      http = Net::HTTP.new(@base.host, @base.port)
      http.use_ssl = @base.scheme == "https"
      http.open_timeout = timeout
      http.write_timeout = timeout
      http.read_timeout = read_timeout
      http.max_retries = 0 # resends are decided above, by what the request is
      http.start
    end
  end
end
