# frozen_string_literal: true

require_relative "lib/sessionary/version"

Gem::Specification.new do |spec|
  repository = "https://github.com/sessionary/sessionary"

  spec.name = "sessionary"
  spec.version = Sessionary::VERSION
  spec.summary = "A client for Sessionary, the session store for AI agents"
  spec.description = "Every Sessionary endpoint as a method, errors as exceptions named by their " \
                     "code, safe resends, paging Enumerators and live streams, on Ruby's standard " \
                     "library alone (net/http with keep-alive, json); RBS signatures in sig/."
  spec.license = "Apache-2.0"
  spec.authors = ["Sessionary"]
  spec.homepage = repository
  spec.metadata = {
    "homepage_uri" => repository,
    "source_code_uri" => "#{repository}/tree/main/clients/ruby",
    "changelog_uri" => "#{repository}/blob/main/clients/ruby/CHANGELOG.md"
  }
  # The code, its signatures and its two pages; not the tests, which need the repository. From
  # this folder, wherever the gemspec is loaded from.
  spec.files = Dir.chdir(__dir__) { Dir["lib/**/*.rb", "sig/**/*.rbs"] } + %w[README.md CHANGELOG.md]
  spec.require_paths = ["lib"]
  spec.required_ruby_version = ">= 3.1"
end
