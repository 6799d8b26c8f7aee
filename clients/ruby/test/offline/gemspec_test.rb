# frozen_string_literal: true

require "rubygems/package"
require "test_helper"
require "tmpdir"

# The gemspec as RubyGems reads it: valid without a warning; the metadata a registry shows
# (homepage, source, changelog: pages of this repository); no runtime gem; and a built gem that
# holds the code, its signatures, the README and the changelog, not the tests.
class GemspecTest < Minitest::Test
  HERE = File.expand_path("../..", __dir__)
  ROOT = File.expand_path("../..", HERE)

  def spec = @spec ||= Gem::Specification.load(File.join(HERE, "sessionary.gemspec"))

  def test_the_gemspec_is_valid_without_a_warning
    _, warnings = capture_io { Dir.chdir(HERE) { spec.validate } }
    assert_empty warnings
    assert_equal ["Apache-2.0", Sessionary::VERSION], [spec.license, spec.version.to_s]
    [spec.summary, spec.description].each { |text| refute_empty text }
  end

  def test_the_metadata_names_the_homepage_the_source_and_the_changelog
    assert_equal %w[changelog_uri homepage_uri source_code_uri], spec.metadata.keys.sort
    assert_equal spec.homepage, spec.metadata["homepage_uri"]
    # The pages they name are this repository's, at the paths it has.
    %w[source_code_uri changelog_uri].each do |key|
      path = spec.metadata[key].delete_prefix(spec.homepage)[%r{\A/(?:tree|blob)/main/(.+)\z}, 1]
      assert path && File.exist?(File.join(ROOT, path)), "#{key}: #{spec.metadata[key]}"
    end
  end

  def test_it_needs_ruby_3_1_and_no_other_gem
    assert_equal Gem::Requirement.new(">= 3.1"), spec.required_ruby_version
    assert spec.required_ruby_version.satisfied_by?(Gem::Version.new(RUBY_VERSION))
    assert_empty spec.runtime_dependencies
  end

  def test_the_gem_holds_the_code_its_signatures_and_its_pages
    Dir.mktmpdir do |folder|
      built = File.join(folder, "sessionary.gem")
      Gem::DefaultUserInteraction.use_ui(Gem::SilentUI.new) do
        Dir.chdir(HERE) { Gem::Package.build(spec, false, false, built) }
      end
      files = Gem::Package.new(built).contents
      wanted = Dir.chdir(HERE) { Dir["lib/**/*.rb"] } + %w[lib/sessionary.rb sig/sessionary.rbs README.md CHANGELOG.md]
      assert_empty wanted - files
      assert_empty files.grep(%r{\Atest/|\.gem\z})
    end
  end
end
