# frozen_string_literal: true

require "minitest/autorun"
require "sessionary"

# The gem has what the spec names, as the generated Sessionary::Spec lists it
# (clients/generate.py): a class for each problem code, which an answer with that code raises,
# and for each operation the method of Client that docs/clients.md's table names.
class SpecTest < Minitest::Test
  TABLE = File.expand_path("../../../docs/clients.md", __dir__)
  # An error answer as Net::HTTP gives it, to Sessionary.error_for.
  Answer = Struct.new(:code, :body) do
    def each_header = {}.each
  end

  # Each operationId with the method the table's Ruby column names (nil for none).
  def ruby_methods
    lines = File.readlines(TABLE, chomp: true)
    header = lines.index { |line| line.start_with?("| Operation |") }
    column = lines[header].split("|").map(&:strip).index("Ruby")
    rows = lines.drop(header + 2).take_while { |line| line.start_with?("|") }
    rows.to_h { |line| line.split("|").values_at(1, column).map { |cell| cell[/`([^`]+)`/, 1] } }
  end

  def test_each_problem_code_raises_its_own_class
    lacking = Sessionary::Spec::ERROR_CLASSES.reject do |code, name|
      next false unless Sessionary.const_defined?(name, false)

      # 418: a status with no class of its own, which would stand in for http_error's
      answer = Answer.new("418", JSON.generate({code: code, detail: "d"}))
      assert_instance_of Sessionary.const_get(name), Sessionary.error_for(answer), code
    end
    assert_empty lacking, "the spec's codes that errors.rb has no class for"
  end

  def test_each_operation_has_a_method
    methods = ruby_methods
    lacking = Sessionary::Spec::OPERATIONS.filter_map do |id, verb, path|
      name = methods[id]
      next if name && Sessionary::Client.public_method_defined?(name)

      "#{verb} #{path} (#{id}): #{name || 'docs/clients.md names none'}"
    end
    assert_empty lacking, "the spec's operations that the client has no method for"
  end
end
