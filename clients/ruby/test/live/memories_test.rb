# frozen_string_literal: true

require "live_helper"

# The memory methods against the live server: a user's and an app's, revised under If-Match
# and rolled back, recalled by words and by meaning, and a session's events remembered.
class MemoriesTest < Minitest::Test
  include Helpers

  def setup
    @sessionary = client
  end

  def teardown
    @sessionary.close
  end

  # A memory but whether it is embedded yet, which the server's worker changes at its own pace.
  def written(memory) = memory.to_h.except("embedded")

  # Until the server's model has embedded every memory: then recall finds them by meaning.
  def all_embedded
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 60
    until @sessionary.embeddings_status.pending.zero?
      assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC), :<, deadline, "the embedding worker is behind"
      sleep 0.1
    end
  end

  # The error of a write under a stale If-Match, which says the revision the memory is at.
  def assert_stale(revision, &write)
    error = assert_raises(Sessionary::StaleMemoryError, &write)
    assert_kind_of Sessionary::PreconditionFailedError, error
    assert_equal [412, "stale_memory", revision], [error.status, error.code, error.current_revision]
  end

  def test_a_users_memories_are_created_read_revised_under_if_match_listed_rolled_back_and_deleted
    user = unique("u")
    made = @sessionary.create_memory(APP, user, memory_id: "diet", text: "I'm vegetarian.", topics: ["food"],
                                                metadata: {"confidence" => 0.9}, author: "user")
    assert_equal ["diet", "user", user, "text", 1, "I'm vegetarian.", ["food"], "user"],
                 [made.id, made.scope, made.user_id, made.kind, made.revision, made.text, made.topics, made.author]
    assert_equal({"confidence" => 0.9}, made.metadata.to_h)
    assert_equal "I'm vegetarian.", made.content.dig("parts", 0, "text")
    assert_raises(Sessionary::MemoryAlreadyExistsError) { @sessionary.create_memory(APP, user, memory_id: "diet", text: "again") }
    other = @sessionary.create_memory(APP, user, text: "My sister lives in Bergen.", topics: ["family"])
    refute_empty other.id # the server's
    assert_equal written(made), written(@sessionary.get_memory(APP, user, "diet"))

    # Each change is a revision; if_match: takes the revision read, and a stale one changes nothing.
    vegan = @sessionary.update_memory(APP, user, "diet", text: "I'm vegan.", if_match: made.revision)
    assert_equal [2, "I'm vegan.", ["food"]], [vegan.revision, vegan.text, vegan.topics]
    assert_stale(2) { @sessionary.update_memory(APP, user, "diet", topics: [], if_match: made.revision) }
    untagged = @sessionary.update_memory(APP, user, "diet", author: nil, ttl: 3600)
    assert_equal [3, nil, "I'm vegan."], [untagged.revision, untagged.author, untagged.text]
    assert_operator untagged.expire_time, :>, Time.now.to_f
    never = @sessionary.update_memory(APP, user, "diet", expire_time: nil, if_match: '"3"') # its ETag as read
    assert_equal [4, nil], [never.revision, never.expire_time]

    page = @sessionary.list_memory_revisions(APP, user, "diet", page_size: 2)
    assert_equal [[4, 3], String], [page.revisions.map(&:revision), page.next_page_token.class]
    assert_equal [[4, "I'm vegan."], [3, "I'm vegan."], [2, "I'm vegan."], [1, "I'm vegetarian."]],
                 @sessionary.memory_revisions(APP, user, "diet", page_size: 1).map { |r| [r.revision, r.text] }

    assert_stale(4) { @sessionary.roll_back_memory(APP, user, "diet", 1, if_match: 3) }
    restored = @sessionary.roll_back_memory(APP, user, "diet", 1, if_match: never.revision)
    assert_equal [5, "I'm vegetarian.", "user"], [restored.revision, restored.text, restored.author]
    assert_equal written(restored), written(@sessionary.get_memory(APP, user, "diet"))

    food = @sessionary.list_memories(APP, user, topic: "food")
    assert_equal [["diet"], nil], [food.memories.map(&:id), food.next_page_token]
    assert_empty @sessionary.list_memories(APP, user, kind: "event").memories
    assert_equal ["diet", other.id], @sessionary.memories(APP, user, page_size: 1).map(&:id) # newest change first
    assert_empty @sessionary.list_memories(APP, unique("u")).memories # another user's are his own

    assert_stale(5) { @sessionary.delete_memory(APP, user, "diet", if_match: 4) }
    @sessionary.delete_memory(APP, user, "diet", if_match: restored.revision)
    [-> { @sessionary.get_memory(APP, user, "diet") }, -> { @sessionary.update_memory(APP, user, "diet", text: "x") },
     -> { @sessionary.list_memory_revisions(APP, user, "diet") }, -> { @sessionary.roll_back_memory(APP, user, "diet", 1) },
     -> { @sessionary.delete_memory(APP, user, "diet") }].each do |gone|
      error = assert_raises(Sessionary::MemoryNotFoundError) { gone.call }
      assert_equal [404, "memory_not_found"], [error.status, error.code]
    end
    @sessionary.delete_memory(APP, user, other.id)
    assert_empty @sessionary.list_memories(APP, user).memories
  end

  def test_recall_finds_memories_by_words_at_once_and_by_meaning_once_they_are_embedded
    user = unique("u")
    ["I'm vegetarian.", "My sister lives in Bergen.", "I cycle to work every day."].each do |text|
      @sessionary.create_memory(APP, user, text: text, topics: [text.start_with?("I") ? "me" : "family"])
    end
    by_words = @sessionary.recall_memories(APP, user, "vegetarian", mode: "words")
    assert_equal ["words", ["I'm vegetarian."]], [by_words.recalled_by, by_words.memories.map { |hit| hit.memory.text }]
    assert_operator by_words.memories.first.word_score, :>, 0
    assert_nil by_words.memories.first.similarity

    all_embedded
    status = @sessionary.embeddings_status
    assert_equal ["meaning+words", 0], [status.recall, status.pending]
    assert_kind_of String, status.model
    # Every memory, however far (min_similarity -1): the nearest two, the best first.
    by_meaning = @sessionary.recall_memories(APP, user, "what food do I like?", limit: 2, min_similarity: -1)
    assert_equal ["meaning+words", nil, 2], [by_meaning.recalled_by, by_meaning.note, by_meaning.memories.size]
    best = by_meaning.memories.first
    assert_equal "I'm vegetarian.", best.memory.text, "no word of the question is in it: found by meaning"
    assert best.memory.embedded
    assert_operator best.similarity, :>, 0
    assert_operator best.score, :<=, 1
    # Filters: a topic, a minimum score (only the first by meaning scores 1).
    family = @sessionary.recall_memories(APP, user, "where does my family live?", topics: ["family"])
    assert_equal ["My sister lives in Bergen."], family.memories.map { |hit| hit.memory.text }
    first = @sessionary.recall_memories(APP, user, "what food do I like?", min_score: 1, mode: "meaning")
    assert_equal ["meaning", [["I'm vegetarian.", 1.0]]],
                 [first.recalled_by, first.memories.map { |hit| [hit.memory.text, hit.score] }]
    assert_empty @sessionary.recall_memories(APP, unique("u"), "what food do I like?", include_app: false).memories
  end

  def test_an_apps_memories_are_every_users_revised_rolled_back_and_deleted_as_a_users_are
    app = unique(APP) # app memories are every user's: an app of this test's own
    rule = @sessionary.create_app_memory(app, memory_id: "hours", text: "The shop opens at nine.", topics: ["hours"])
    assert_equal ["app", nil, 1], [rule.scope, rule.user_id, rule.revision]
    assert_raises(Sessionary::MemoryAlreadyExistsError) { @sessionary.create_app_memory(app, memory_id: "hours", text: "x") }
    assert_equal written(rule), written(@sessionary.get_app_memory(app, "hours"))
    assert_raises(Sessionary::MemoryNotFoundError) { @sessionary.get_memory(app, "ada", "hours") } # not a user's

    later = @sessionary.update_app_memory(app, "hours", text: "The shop opens at ten.", if_match: 1)
    assert_equal 2, later.revision
    assert_stale(2) { @sessionary.update_app_memory(app, "hours", text: "x", if_match: 1) }
    assert_equal ["The shop opens at ten.", "The shop opens at nine."],
                 @sessionary.list_app_memory_revisions(app, "hours").revisions.map(&:text)
    assert_equal [2, 1], @sessionary.app_memory_revisions(app, "hours", page_size: 1).map(&:revision)
    back = @sessionary.roll_back_app_memory(app, "hours", 1, if_match: later.revision)
    assert_equal [3, "The shop opens at nine."], [back.revision, back.text]
    assert_stale(3) { @sessionary.roll_back_app_memory(app, "hours", 2, if_match: 2) }

    @sessionary.create_app_memory(app, text: "Returns are free within 30 days.", topics: ["returns"])
    assert_equal ["hours"], @sessionary.list_app_memories(app, topic: "hours").memories.map(&:id)
    assert_equal 2, @sessionary.app_memories(app, page_size: 1).count
    assert_empty @sessionary.list_memories(app, "ada").memories # the app's are not listed as a user's

    assert_equal ["hours"], @sessionary.recall_app_memories(app, "opens", mode: "words").memories.map { |hit| hit.memory.id }
    # A user's recall takes in the app's, unless told not to.
    asked = @sessionary.recall_memories(app, "ada", "opens", mode: "words")
    assert_equal [%w[hours app]], asked.memories.map { |hit| [hit.memory.id, hit.memory.scope] }
    assert_empty @sessionary.recall_memories(app, "ada", "opens", mode: "words", include_app: false).memories

    @sessionary.delete_app_memory(app, "hours", if_match: back.revision)
    assert_raises(Sessionary::MemoryNotFoundError) { @sessionary.get_app_memory(app, "hours") }
    assert_raises(Sessionary::MemoryNotFoundError) { @sessionary.delete_app_memory(app, "hours") }
    assert_equal 1, @sessionary.list_app_memories(app).memories.size
  end

  def test_a_sessions_user_events_are_remembered_once_and_forgotten_with_the_session
    user = unique("u")
    chat = new_session(user: user)
    chat.append_events([{id: "e1", author: "user", content: text("I'm allergic to peanuts.")},
                        {id: "e2", author: "chef", content: text("Noted: no peanuts.", role: "model")},
                        {id: "e3", author: "user"}]) # no text: nothing to remember
    assert_equal 1, chat.remember.remembered # what the user said, by default
    assert_equal 0, @sessionary.remember_session(APP, user, chat.session_id).remembered # only what is new
    assert_equal 1, chat.remember(event_ids: ["e2"]).remembered # named events, any author's

    learnt = @sessionary.memories(APP, user, session_id: chat.session_id).map do |memory|
      [memory.kind, memory.text, memory.author, memory.source.to_h]
    end
    assert_equal [["event", "I'm allergic to peanuts.", "user", {"sessionId" => chat.session_id, "eventIds" => ["e1"]}],
                  ["event", "Noted: no peanuts.", "chef", {"sessionId" => chat.session_id, "eventIds" => ["e2"]}]],
                 learnt.sort_by { |memory| memory[1] }
    assert_equal 2, @sessionary.recall_memories(APP, user, "peanuts", mode: "words").memories.size

    assert_raises(Sessionary::SessionNotFoundError) { @sessionary.remember_session(APP, user, unique("none")) }
    chat.delete
    assert_empty @sessionary.list_memories(APP, user).memories # forgotten with their session
    assert_empty @sessionary.recall_memories(APP, user, "peanuts", mode: "words").memories
  end
end
