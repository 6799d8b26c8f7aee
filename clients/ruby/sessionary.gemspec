# frozen_string_literal: true

require_relative "lib/sessionary/version"

Gem::Specification.new do |spec|
  spec.name = "sessionary"
  spec.version = Sessionary::VERSION
  spec.summary = "A client for Sessionary, the session store for AI agents"
  spec.description = "Every Sessionary endpoint as a method, errors as exceptions named by their " \
                     "code, safe resends, paging Enumerators and live streams, on Ruby's standard " \
                     "library alone (net/http with keep-alive, json)."
  spec.license = "Apache-2.0"
  spec.authors = ["Sessionary"]
  spec.files = Dir["lib/**/*.rb"] + ["README.md"]
  spec.require_paths = ["lib"]
  spec.required_ruby_version = ">= 3.1"
end
