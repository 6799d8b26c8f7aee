# frozen_string_literal: true

# What the tests against a live server share: its URL, an app of their own, fresh sessions,
# and a relay that loses its answers on purpose.
require "securerandom"
require "socket"
require "uri"
require "test_helper"

BASE_URL = ENV.fetch("SESSIONARY_URL") do
  abort "`rake test:live` runs against a server: set SESSIONARY_URL (`make run` serves " \
        "http://127.0.0.1:8000). `rake test` needs none."
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
