# frozen_string_literal: true

module Sessionary
  VERSION = "0.1.0"
end
