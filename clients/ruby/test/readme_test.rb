# frozen_string_literal: true

require "open3"
require "rbconfig"
require "test_helper"
require "tmpdir"

# The README's examples run as written, in order, as one script, with the gem built and
# installed as its Install section says (in a scratch folder): each prints what the `text`
# block after it shows, or nothing. So do the repository README's and the agent turn in
# examples/ruby.
class ReadmeTest < Minitest::Test
  HERE = File.expand_path("..", __dir__)
  EXAMPLE = File.expand_path("../../examples/ruby/agent_turn.rb", HERE)

  def test_the_readmes_examples_print_what_it_shows
    blocks = examples
    assert_operator blocks.size, :>=, 5
    script = blocks.each_with_index.map { |(code, _), n| "#{code}$stdout.puts(#{separator(n).inspect})\n" }.join
    out = run_installed(script)
    printed = blocks.each_index.map do |n|
      head, _, out = out.partition("#{separator(n)}\n")
      head
    end
    assert_equal blocks.map(&:last), printed
  end

  def test_the_repositorys_readme_shows_the_client_as_it_is
    code, = File.read(File.expand_path("../../README.md", HERE)).scan(/^```ruby\n(.*?)^```$/m).flatten
    assert_equal "1 user\n", command(RbConfig.ruby, "-I", File.join(HERE, "lib"), "-", stdin_data: code)
  end

  def test_the_example_agent_turn_prints_what_it_says
    said = File.read(EXAMPLE)[/# prints:\n#\n((?:#   .*\n)+)/, 1].gsub(/^#   /, "")
    out, err, status = Open3.capture3(env, RbConfig.ruby, "-I", File.join(HERE, "lib"), EXAMPLE)
    assert status.success?, err
    assert_equal said, out
  end

  private

  # Each `ruby` block with the output the `text` block that follows it shows ("" if none).
  def examples
    fenced = File.read(File.join(HERE, "README.md")).scan(/^```(\w*)\n(.*?)^```$/m)
    fenced.each_with_object([]) do |(language, body), blocks|
      blocks << [body, ""] if language == "ruby"
      blocks.last[1] = body if language == "text" && blocks.any?
    end
  end

  def separator(n) = "-- end of example #{n} --"

  def env = {"SESSIONARY_URL" => BASE_URL, "RUBYLIB" => nil, "RUBYOPT" => nil}

  # `script`'s output, run with the gem as `gem build` and `gem install` make it.
  def run_installed(script)
    Dir.mktmpdir do |dir|
      gem = File.join(dir, "sessionary.gem")
      command("gem", "build", "sessionary.gemspec", "--output", gem, chdir: HERE)
      command("gem", "install", "--local", "--no-document", "--install-dir", File.join(dir, "gems"), gem)
      installed = env.merge("GEM_HOME" => File.join(dir, "gems"), "GEM_PATH" => File.join(dir, "gems"))
      where = command(RbConfig.ruby, "-e", 'require "sessionary"; print Gem.loaded_specs.fetch("sessionary").full_gem_path',
                  env: installed)
      assert where.start_with?(dir), where # the installed gem, not this folder's lib
      command(RbConfig.ruby, "-", stdin_data: script, env: installed)
    end
  end

  def command(*argv, env: self.env, **options)
    out, err, status = Open3.capture3(env, *argv, **options)
    assert status.success?, "#{argv.join(' ')}: #{err}"
    out
  end
end
