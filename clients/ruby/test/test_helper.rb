# frozen_string_literal: true

# What every test shares: minitest, the gem from lib/, and the stub of the API.
require "minitest/autorun"
require "sessionary"
require "stub_api"

# A stub of the API of its own for each test, and a client of it that resends at once: `api`
# says what it answers and what it received. Each test ends checking that the stub gave only
# answers the spec describes.
module Stubbed
  attr_reader :api, :sessionary

  def setup
    @api = StubAPI.new
    @sessionary = Sessionary::Client.new(base_url: @api.url, backoff: 0.001)
  end

  def teardown
    @sessionary.close
    @api.close
    assert_empty @api.mismatches, "the stub answered what the API would not"
  end
end
