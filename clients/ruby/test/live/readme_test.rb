# frozen_string_literal: true

require "fileutils"
require "open3"
require "rbconfig"
require "live_helper"
require "tmpdir"

# The README's examples run as written, in order, as one script, with the gem built and
# installed by its Install steps as written: each prints what the `text` block after it shows,
# or nothing. So do the repository README's and the agent turn in examples/ruby, by the steps
# its comment gives. Each runs twice in a row against the server, as a reader may run it.
class ReadmeTest < Minitest::Test
  HERE = File.expand_path("../..", __dir__)
  EXAMPLE = File.expand_path("../../examples/ruby/agent_turn.rb", HERE)

  def test_the_readmes_examples_print_what_it_shows
    blocks = examples
    assert_operator blocks.size, :>=, 5
    script = blocks.each_with_index.map { |(code, _), n| "#{code}$stdout.puts(#{separator(n).inspect})\n" }.join
    install = File.read(File.join(HERE, "README.md"))[/^## Install\n.*?^```sh\n(.*?)^```$/m, 1]
    in_a_checkout do |root, env|
      command("sh", "-e", "-c", install, chdir: root, env: env)
      where = command(RbConfig.ruby, "-e", 'require "sessionary"; print Gem.loaded_specs.fetch("sessionary").full_gem_path',
                      env: env)
      assert where.start_with?(root), where # the gem installed, not this folder's lib
      2.times do
        out = command(RbConfig.ruby, "-", stdin_data: script, env: env)
        printed = blocks.each_index.map do |n|
          head, _, out = out.partition("#{separator(n)}\n")
          head
        end
        assert_equal blocks.map(&:last), printed
      end
    end
  end

  def test_the_repositorys_readme_shows_the_client_as_it_is
    code, = File.read(File.expand_path("../../README.md", HERE)).scan(/^```ruby\n(.*?)^```$/m).flatten
    2.times do
      assert_equal "1 user\n", command(RbConfig.ruby, "-I", File.join(HERE, "lib"), "-", stdin_data: code)
    end
  end

  def test_the_example_agent_turn_runs_as_its_comment_says
    source = File.read(EXAMPLE)
    steps = source[/^#\n((?:#   .*\n)+)/, 1].gsub(/^#   /, "")
    said = source[/prints:\n#\n((?:#   .*\n)+)/, 1].gsub(/^#   /, "")
    in_a_checkout do |root, env|
      2.times do
        out = command("sh", "-e", "-c", steps, chdir: root, env: env)
        assert out.end_with?(said), "#{steps}printed\n#{out}"
      end
    end
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

  # A scratch copy of the repository's Ruby client and example, for steps run from its root
  # (`cd clients/ruby && gem build …`), and an environment whose gems are installed in it.
  def in_a_checkout
    Dir.mktmpdir do |root|
      FileUtils.mkdir_p([File.join(root, "clients"), File.join(root, "examples")])
      FileUtils.cp_r(HERE, File.join(root, "clients", "ruby"))
      FileUtils.rm_f(Dir[File.join(root, "clients", "ruby", "*.gem")])
      FileUtils.cp_r(File.dirname(EXAMPLE), File.join(root, "examples", "ruby"))
      gems = File.join(root, "gems")
      yield root, env.merge("GEM_HOME" => gems, "GEM_PATH" => gems)
    end
  end

  def command(*argv, env: self.env, **options)
    out, err, status = Open3.capture3(env, *argv, **options)
    assert status.success?, "#{argv.join(' ')}: #{err}"
    out
  end
end
