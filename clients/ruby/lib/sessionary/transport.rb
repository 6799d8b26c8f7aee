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
    # too, not only when it never left. `upload`: a body sent as it is (an Upload), not as
    # JSON. `redirects`: a redirection is an answer too (a download's reference), not an
    # error. With a block, a successful answer's body is yielded in chunks as they arrive, not
    # read whole; once one was, the request is not resent. `options`: the call's
    # (REQUEST_OPTIONS).
    def request(method, path, query: nil, body: nil, upload: nil, headers: {}, idempotent: false,
                redirects: false, options: {}, &sink)
      target = @prefix + path + (query.nil? || query.empty? ? "" : "?#{URI.encode_www_form(query)}")
      body = Transport.encode(body) unless body.nil?
      timeout = options.fetch(:timeout, @timeout)
      retries = upload.nil? || upload.replayable? ? options.fetch(:max_retries, @retries) : 0
      attempt = 0
      loop do
        given = false # a chunk went to the block: the answer cannot be asked for again
        own = nil # an error the block raised, raised as it is
        outcome = begin
          request = build(method, target, body, headers, options)
          upload&.attach(request)
          response = with_connection(timeout) do |http|
            http.request(request) do |answer|
              next unless sink && answer.is_a?(Net::HTTPSuccess)

              received = 0
              answer.read_body do |chunk|
                given = true
                received += chunk.bytesize
                begin
                  sink.call(chunk)
                rescue Exception => e # the caller's, whatever it is
                  own = e
                  raise
                end
              end
              # Net::HTTP takes an answer that ends early for a whole one: this one is not.
              length = answer.content_length
              raise EOFError, "the answer ended after #{received} of its #{length} bytes" if length && received < length
            end
          end
          answered = response.is_a?(Net::HTTPSuccess) || (redirects && response.is_a?(Net::HTTPRedirection))
          answered ? response : Sessionary.error_for(response)
        rescue *LOST => e
          raise if e.equal?(own)
          return answer(e, request_id(options)) if given

          e
        end
        wait = delay(idempotent, attempt, outcome, retries)
        return answer(outcome, request_id(options)) if wait.nil?

        sleep(wait)
        attempt += 1
      end
    end

    # A body sent as it is rather than as JSON, an artifact's: a String (its bytes, sent again
    # by a resend), or an IO streamed from where it is (rewound there for a resend if it can
    # seek, else sent once), with its length when it knows it, else chunked.
    class Upload
      def initialize(data)
        @data = data
        @start = data.is_a?(String) ? nil : Upload.position(data)
      end

      def replayable? = @data.is_a?(String) || !@start.nil?

      def attach(request)
        if @data.is_a?(String)
          request.body = @data
          return
        end

        @data.seek(@start) unless @start.nil?
        request.body_stream = @data
        length = Upload.remaining(@data, @start)
        length.nil? ? request["Transfer-Encoding"] = "chunked" : request.content_length = length
      end

      # Where an IO is, if it can seek back there (a file, a StringIO; not a pipe or socket).
      def self.position(io)
        io.pos if io.respond_to?(:seek)
      rescue IOError, SystemCallError
        nil
      end

      # The bytes left from `start`, when the IO knows its size.
      def self.remaining(io, start)
        io.size - start if !start.nil? && io.respond_to?(:size)
      rescue IOError, SystemCallError
        nil
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
    # one left another way (an error, an interrupt, a `break` out of a download's block: it may
    # be mid-answer) is closed, not given back.
    def with_connection(timeout)
      http = @lock.synchronize { @idle.pop } || connect(timeout)
      http.read_timeout = http.write_timeout = timeout # the call's, on a connection of another's
      result = yield http
      kept = @lock.synchronize { @idle.size < @pool_size && @idle.push(http) }
      http.finish unless kept
      http = nil
      result
    ensure
      http.finish if http&.started?
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
