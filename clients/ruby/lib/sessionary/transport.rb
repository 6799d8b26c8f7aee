# frozen_string_literal: true

require "net/http"
require "openssl"
require "uri"

module Sessionary
  # Sends requests over a pool of keep-alive Net::HTTP connections, shared by threads, and
  # sends them again when that is safe.
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
    TRANSIENT = [502, 503, 504].freeze
    # 503s that the same request would meet again: a search too costly for the server's limit.
    LASTING = ["search_timeout"].freeze
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
    # too, not only when it never left.
    def request(method, path, query: nil, body: nil, headers: {}, idempotent: false)
      target = @prefix + path + (query.nil? || query.empty? ? "" : "?#{URI.encode_www_form(query)}")
      body = Transport.encode(body) unless body.nil?
      attempt = 0
      loop do
        outcome = begin
          with_connection { |http| http.request(build(method, target, body, headers)) }
        rescue *LOST => e
          e
        end
        wait = delay(idempotent, attempt, outcome)
        return answer(outcome) if wait.nil?

        sleep(wait)
        attempt += 1
      end
    end

    # Opens a stream on a connection of its own and yields its body's chunks as they come;
    # `idle` seconds without a byte is a Net::ReadTimeout.
    def stream(path, headers, idle:)
      http = connect(read_timeout: idle)
      request = build("GET", @prefix + path, nil, {"Accept" => "text/event-stream", **headers})
      http.request(request) do |response|
        raise Sessionary.error_for(response) unless response.is_a?(Net::HTTPSuccess)

        response.read_body { |chunk| yield chunk }
      end
    ensure
      http&.finish if http&.started?
    end

    # How long to wait before resending, after attempt `attempt` ended in `outcome` (an
    # answer or an error); nil to give up with it.
    def delay(idempotent, attempt, outcome)
      return nil if attempt >= @retries

      resend = if outcome.is_a?(Exception)
                 idempotent || NOT_SENT.any? { |kind| outcome.is_a?(kind) }
               else
                 idempotent && TRANSIENT.include?(outcome.code.to_i) &&
                   !LASTING.include?(Sessionary.error_for(outcome).code)
               end
      # Full jitter, so that clients that failed together do not come back together.
      resend ? rand * [5.0, @backoff * (2**attempt)].min : nil
    end

    def close
      @lock.synchronize { @idle.pop.finish while @idle.any? }
    end

    # A body as it is sent: JSON, unless it is text already (an import's NDJSON). One with a
    # string that is not valid UTF-8 is refused, as the server would refuse it.
    def self.encode(body)
      raise Sessionary.refused("strings must be valid UTF-8", "body") unless Sessionary.utf8?(body)

      body.is_a?(String) ? body : JSON.generate(body)
    end

    private

    def answer(outcome)
      if outcome.is_a?(Exception)
        kind = TIMEOUTS.any? { |timeout| outcome.is_a?(timeout) } ? APITimeoutError : APIConnectionError
        raise kind.new("#{outcome.class}: #{outcome.message}"), cause: outcome
      end
      raise Sessionary.error_for(outcome) unless outcome.is_a?(Net::HTTPSuccess)

      outcome
    end

    def build(method, target, body, headers)
      request = METHODS.fetch(method).new(target, @headers.merge(headers))
      unless body.nil?
        request["Content-Type"] ||= "application/json"
        request.body = body
      end
      request
    end

    # A pooled connection for the block; one that failed is closed, not given back.
    def with_connection
      http = @lock.synchronize { @idle.pop } || connect
      result = yield http
      kept = @lock.synchronize { @idle.size < @pool_size && @idle.push(http) }
      http.finish unless kept
      result
    rescue Exception # any way out, an interrupt too: the connection may be mid-answer
      http.finish if http&.started?
      raise
    end

    def connect(read_timeout: @timeout)
      http = Net::HTTP.new(@base.host, @base.port)
      http.use_ssl = @base.scheme == "https"
      http.open_timeout = @timeout
      http.write_timeout = @timeout
      http.read_timeout = read_timeout
      http.max_retries = 0 # resends are decided above, by what the request is
      http.start
    end
  end
end
