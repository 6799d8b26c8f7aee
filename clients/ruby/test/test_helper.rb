# frozen_string_literal: true

require "minitest/autorun"
require "securerandom"
require "socket"
require "uri"
require "sessionary"

BASE_URL = ENV.fetch("SESSIONARY_URL") do
  abort "The tests run against a server: set SESSIONARY_URL (`make run` serves http://127.0.0.1:8000)."
end
APP = "ruby-client-#{SecureRandom.hex(3)}" # its own app each run: app state is shared by its sessions

module Helpers
  def client(**options) = Sessionary::Client.new(base_url: BASE_URL, **options)

  def unique(prefix) = "#{prefix}-#{SecureRandom.hex(4)}"

  # A new session of user `ada` (of a user of its own with `user:`), as a handle.
  def new_session(sessionary = client, user: "ada", **options)
    made = sessionary.create_session(APP, user, session_id: unique("s"), **options)
    sessionary.session(APP, user, made.id)
  end

  def text(text, role: "user") = {role: role, parts: [{text: text}]}

  def call(id, name, args = {}) = {role: "model", parts: [{functionCall: {id: id, name: name, args: args}}]}

  def answer(id, name, response) = {role: "user", parts: [{functionResponse: {id: id, name: name, response: response}}]}
end

# A TCP relay to the server that can lose answers on purpose. Each connection is copied both
# ways; `decide` is called with the head of the request being answered (its request line and
# headers) and each chunk of the answer, and says what to do with the chunk: :relay it, :drop
# it (the connection is closed without it), or :cut (relayed, then the connection closed).
class Relay
  attr_reader :connections

  def initialize(upstream = BASE_URL, &decide)
    @upstream = URI(upstream)
    @decide = decide || ->(_head, _chunk) { :relay }
    @listener = TCPServer.new("127.0.0.1", 0)
    @connections = 0
    @heads = []
    @sent = +""
    @lock = Mutex.new
    @acceptor = Thread.new { loop { relay(@listener.accept) } }
  end

  def url = "http://127.0.0.1:#{@listener.addr[1]}"

  # The heads of the requests relayed so far; all the bytes relayed to the server.
  def heads = @lock.synchronize { @heads.dup }
  def sent = @lock.synchronize { @sent.dup }

  def close
    @acceptor.kill
    @listener.close
  end

  private

  def relay(downstream)
    @lock.synchronize { @connections += 1 }
    Thread.new do
      upstream = TCPSocket.new(@upstream.host, @upstream.port)
      head = nil
      requests = Thread.new do
        loop do
          chunk = downstream.readpartial(65_536)
          @lock.synchronize do
            @sent << chunk
            @heads << (head = chunk) if chunk.match?(%r{\A[A-Z]+ \S+ HTTP/1\.1\r\n})
          end
          upstream.write(chunk)
        end
      rescue IOError, SystemCallError
        upstream.close_write rescue nil
      end
      loop do
        chunk = upstream.readpartial(65_536)
        what = @decide.call(head, chunk)
        downstream.write(chunk) unless what == :drop
        break unless what == :relay
      end
    rescue IOError, SystemCallError
      nil
    ensure
      requests&.kill
      [upstream, downstream].each { |socket| socket&.close rescue nil }
    end
  end
end

# A server of canned answers (raw HTTP): the nth request gets the nth of `answers`, the last
# one those after it; a Proc is called for its answer (it may take its time), and nil answers
# nothing at all. `requests` counts them; `heads` are their request lines and headers.
class CannedServer
  attr_reader :requests

  def initialize(*answers)
    @listener = TCPServer.new("127.0.0.1", 0)
    @requests = 0
    @heads = []
    @lock = Mutex.new
    @acceptor = Thread.new do
      loop do
        socket = @listener.accept
        Thread.new do
          while (head = socket.gets("\r\n\r\n"))
            socket.read(head[/^content-length: *(\d+)/i, 1].to_i)
            n = @lock.synchronize { @heads << head; @requests += 1 }
            answer = answers[[n, answers.size].min - 1]
            answer = answer.call if answer.respond_to?(:call)
            answer ? socket.write(answer) : sleep
          end
        rescue IOError, SystemCallError
          nil
        ensure
          socket.close
        end
      end
    end
  end

  def heads = @lock.synchronize { @heads.dup }

  def url = "http://127.0.0.1:#{@listener.addr[1]}"

  def close
    @acceptor.kill
    @listener.close
  end
end
