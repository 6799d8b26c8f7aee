# frozen_string_literal: true

require "json"

module Sessionary
  # A JSON object of an answer (a session, an event, a page…): its fields answer to snake_case
  # methods (`session.app_name` reads `appName`) and to `[]` by their wire name, as a String or
  # a Symbol (`[]` of a field that is absent is nil); nested objects are records too, lists
  # are Arrays. Keys stay the wire's Strings: state keys and labels are data (`user:units`),
  # not names. `to_h` gives the JSON back. Not Enumerable, whose methods would hide fields
  # (`count`).
  class Record
    # A record of a Hash, Arrays of them mapped, anything else as it is.
    def self.wrap(value)
      case value
      when Hash then new(value)
      when Array then value.map { |item| wrap(item) }
      else value
      end
    end

    def initialize(fields)
      @fields = fields
    end

    def [](key) = Record.wrap(@fields[key.to_s])
    def key?(key) = @fields.key?(key.to_s)
    def keys = @fields.keys
    def fetch(key, *default, &block) = Record.wrap(@fields.fetch(key.to_s, *default, &block))
    def dig(key, *rest) = rest.empty? ? self[key] : self[key]&.dig(*rest)
    def each(&block) = @fields.each { |key, value| block.call(key, Record.wrap(value)) }

    # The JSON object as parsed: a Hash of String keys.
    def to_h = @fields
    def to_json(*args) = @fields.to_json(*args)
    def ==(other) = other.is_a?(Record) ? to_h == other.to_h : to_h == other
    def inspect = "#<Sessionary::Record #{@fields.inspect}>"
    alias to_s inspect

    def respond_to_missing?(name, include_private = false)
      !wire_name(name).nil? || super
    end

    def method_missing(name, *args)
      key = wire_name(name)
      return super if key.nil? || !args.empty?

      self[key]
    end

    private

    # The field a method names: itself, or its camelCase (`next_page_token`: `nextPageToken`).
    def wire_name(name)
      name = name.to_s
      camel = name.gsub(/_([a-z\d])/) { Regexp.last_match(1).upcase }
      [name, camel].find { |key| @fields.key?(key) }
    end
  end

  # One server-sent event of a stream: its `event:` name (`appended`, `closed`…), its `id:`
  # (the position it carries, for a session's stream the seq) and its `data:` as a Record.
  StreamEvent = Struct.new(:event, :id, :data, keyword_init: true)

  # What an append did with its event (Client#append_event_outcome), as the Python and
  # TypeScript clients say it: `:stored` it now (201, with its `seq`); found it `:replayed`
  # (200: this id was stored before with the same content, by an earlier call or a resend of
  # this one after a lost answer; nothing was written); or `:acknowledged` a `partial` one
  # (202: echoed, never stored). `event` is the event as the server answered it.
  Appended = Struct.new(:event, :outcome, keyword_init: true) do
    def stored? = outcome == :stored
    def replayed? = outcome == :replayed
    def acknowledged? = outcome == :acknowledged
  end

  # A download (Client#download_artifact): `data`, the content (or the part `range:` asked
  # for) as a String, its encoding UTF-8 for text and binary else, nil when it went to `to:`
  # or a block; its `mime_type`, the `version` served, its `sha256` (hex: its ETag), the
  # `range` of bytes these are (for a partial download) and `size`, the whole content's
  # length. A reference (saved with a URI other than `artifact://`) has its `file_uri`, where
  # the content is, and nothing else.
  ArtifactContent = Struct.new(:data, :mime_type, :version, :sha256, :range, :size, :file_uri,
                               keyword_init: true) do
    def reference? = !file_uri.nil?
  end
end
