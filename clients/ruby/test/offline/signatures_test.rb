# frozen_string_literal: true

require "rbs"
require "rbs/cli"
require "stringio"
require "test_helper"

# The RBS signatures in sig/ (the rbs gem comes with Ruby): valid, as `rbs validate` says, and
# true to the gem: each public method of the client, a session's handle, a record, a stream
# event, an append's outcome and a download has its signature and each signature its method; a
# handle's is its client method's without the app, user and session; each error of the gem is
# declared, and each error declared is the gem's, of the same parent.
class SignaturesTest < Minitest::Test
  SIG = File.expand_path("../../sig", __dir__)
  CHECKED = %w[Client SessionHandle Record StreamEvent Appended ArtifactContent].freeze

  # Core's signatures and the gem's, loaded once: it takes seconds.
  def self.environment
    @environment ||= RBS::EnvironmentLoader.new.then do |loader|
      loader.add(path: Pathname(SIG))
      RBS::Environment.from_loader(loader).resolve_type_names
    end
  end

  def setup
    @env = SignaturesTest.environment
    @builder = RBS::DefinitionBuilder.new(env: @env)
  end

  def test_the_signatures_are_valid
    said = StringIO.new
    RBS::CLI.new(stdout: said, stderr: said).run(["-I", SIG, "validate"]) # raises at a mistake
    assert_includes said.string, "`::Sessionary::Client`"
  end

  def test_every_public_method_has_a_signature_and_every_signature_a_method
    CHECKED.each do |name|
      ruby = Sessionary.const_get(name)
      assert_equal ruby.public_instance_methods(false).sort, declared(@builder.build_instance(type(name))), name
    end
    assert_equal [:if_match_header], declared(@builder.build_singleton(type("Client")), :if_match_header)
    assert_equal [:wrap], declared(@builder.build_singleton(type("Record")), :wrap)
  end

  def test_a_handles_methods_are_its_clients_without_the_first_three_arguments
    client = @builder.build_instance(type("Client")).methods
    handle = @builder.build_instance(type("SessionHandle")).methods
    Sessionary::SessionHandle::METHODS.each do |name, method|
      expected = client.fetch(method).method_types.map do |overload|
        function = overload.type
        overload.update(type: function.update(required_positionals: function.required_positionals.drop(3))).to_s
      end
      assert_equal expected, handle.fetch(name).method_types.map(&:to_s), "#{name}, as #{method}"
    end
  end

  def test_each_error_declared_is_the_gems_of_the_same_parent
    errors = @env.class_decls.keys.select { |name| name.to_s.start_with?("::Sessionary::") && name.name.end_with?("Error") }
    gems = Sessionary.constants.map { |name| Sessionary.const_get(name) }.select do |value|
      value.is_a?(Class) && value <= Sessionary::Error
    end
    assert_equal gems.map { |error| "::#{error.name}" }.sort, errors.map(&:to_s).sort
    errors.each do |name|
      ruby = Object.const_get(name.to_s)
      parent = @builder.build_instance(name).ancestors.ancestors[1].name.to_s.delete_prefix("::")
      assert_equal ruby.superclass.name, parent, name.to_s
      declared(@builder.build_instance(name)).each do |method|
        assert ruby.public_method_defined?(method), "#{name}##{method}"
      end
    end
  end

  private

  def type(name) = RBS::TypeName("::Sessionary::#{name}")

  # The public methods a definition declares itself (`only`: those of these names).
  def declared(definition, *only)
    methods = definition.methods.select do |name, method|
      method.defined_in == definition.type_name && method.public? && (only.empty? || only.include?(name))
    end
    methods.keys.sort
  end
end
