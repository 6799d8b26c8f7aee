# frozen_string_literal: true

# A Ruby agent worker's turn with a tool call, while a watcher follows the session live.
#
#   (cd clients/ruby && gem build sessionary.gemspec && gem install --local ./sessionary-0.1.0.gem)
#   ruby examples/ruby/agent_turn.rb   # against SESSIONARY_URL, else http://127.0.0.1:8000
#
# from the repository's root (or, without installing the gem, `ruby -I clients/ruby/lib
# examples/ruby/agent_turn.rb`). It prints:
#
#   pending calls: call-1
#   context: 4 events in 22 tokens
#   watched: 1 appended, 2 appended, 3 appended, 4 appended, 5 closed

require "securerandom"
require "sessionary"

sessionary = Sessionary::Client.new # SESSIONARY_URL and SESSIONARY_API_KEY
created = sessionary.create_session("examples", "ada", session_id: "turn-#{SecureRandom.uuid}")
chat = sessionary.session("examples", "ada", created.id)

# The watcher reads the whole session, then what is committed from now, until it is closed.
watcher = Thread.new { chat.stream_events(after_seq: 0).map { |change| "#{change.id} #{change.event}" } }

chat.append_event({author: "user", content: {role: "user", parts: [{text: "Weather in Oslo?"}]}})
call = {id: "call-1", name: "get_weather", args: {city: "Oslo"}}
chat.append_event({author: "forecaster", content: {role: "model", parts: [{functionCall: call}]}})
puts "pending calls: #{chat.tool_calls(status: 'pending').map(&:id).join(', ')}"

answer = {id: "call-1", name: "get_weather", response: {celsius: 21}}
chat.append_event({author: "forecaster", content: {role: "user", parts: [{functionResponse: answer}]}})
chat.append_event({author: "forecaster", content: {role: "model", parts: [{text: "Sunny, 21 °C."}]}})

context = chat.context(token_budget: 1000)
puts "context: #{context.events.size} events in #{context.estimated_tokens} tokens"

chat.close("completed")
puts "watched: #{watcher.value.join(', ')}"
