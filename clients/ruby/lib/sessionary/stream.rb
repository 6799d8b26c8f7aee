# frozen_string_literal: true

require "json"

module Sessionary
  # Live streams: `text/event-stream` bodies parsed as they arrive, and opened again after the
  # last `id:` seen (`Last-Event-ID`) when the connection is lost, as an EventSource would.
  module Stream
    # A stream waits this long for a byte (the server sends a heartbeat every 15 s) before it
    # takes the connection for lost and opens it again.
    IDLE_TIMEOUT = 60

    # The frames of one connection's body, fed chunk by chunk; comments (heartbeats) skipped.
    class Parser
      LINE_END = /\r\n|\r(?!\z)|\n/.freeze

      def initialize
        @buffer = String.new(encoding: Encoding::BINARY)
        @fields = {}
      end

      # Yields each StreamEvent that `chunk` completes.
      def feed(chunk)
        @buffer << chunk.b
        # A line ends at CR, LF or CRLF; a CR last in the buffer may be the start of a CRLF.
        while (ending = LINE_END.match(@buffer))
          line = @buffer.byteslice(0, ending.begin(0)).force_encoding(Encoding::UTF_8)
          @buffer = @buffer.byteslice(ending.end(0)..)
          frame = take(line)
          yield frame if frame
        end
      end

      private

      def take(line)
        return dispatch if line.empty?
        return nil if line.start_with?(":")

        name, value = line.split(":", 2)
        value = value.to_s.delete_prefix(" ")
        if name == "data"
          @fields["data"] = @fields.key?("data") ? "#{@fields['data']}\n#{value}" : value
        elsif %w[event id].include?(name)
          @fields[name] = value
        end
        nil
      end

      def dispatch
        fields = @fields
        @fields = {}
        return nil unless fields.key?("data")

        StreamEvent.new(
          event: fields.fetch("event", "message"),
          id: fields["id"]&.to_i,
          data: Record.wrap(JSON.parse(fields["data"]))
        )
      end
    end

    # The frames of a stream until one that `ends` (called with each) says is its last, across
    # connections: a lost one
    # (dropped, ended by the server, silent for IDLE_TIMEOUT) is opened again after the last
    # `id` seen, `max_retries` of the call's `options` (else the client's `retries`) times in a
    # row at most before an APIConnectionError; any byte received resets that count. An error
    # answer to the opening is resent as a read's is (a 503 after its Retry-After), else raised.
    def self.follow(transport, path, after, ends, options)
      retries = options.fetch(:max_retries, transport.retries)
      Enumerator.new do |out|
        catch(:ended) do
          losses = 0
          loop do
            begin
              parser = Parser.new
              headers = after.nil? ? {} : {"Last-Event-ID" => after.to_s}
              refused = transport.stream(path, headers, idle: IDLE_TIMEOUT, options: options) do |chunk|
                losses = 0 unless chunk.empty? # Net::HTTP yields "" for an empty body
                parser.feed(chunk) do |frame|
                  after = frame.id || after
                  out << frame
                  throw :ended if ends.call(frame)
                end
              end
              lost = refused || EOFError.new("the server ended the stream")
            rescue *Transport::LOST => e
              lost = e
            end
            losses += 1
            wait = transport.delay(true, losses - 1, lost, retries)
            raise lost if wait.nil? && lost.is_a?(APIError)
            if wait.nil?
              raise APIConnectionError.new("the stream was lost #{losses} times in a row",
                                           request_id: transport.request_id(options)), cause: lost
            end

            sleep(wait)
          end
        end
      end
    end
  end
end
