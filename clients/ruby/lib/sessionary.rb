# frozen_string_literal: true

# A client for Sessionary, the session store for AI agents, on Ruby's standard library alone.
module Sessionary; end

require_relative "sessionary/version"
require_relative "sessionary/errors"
require_relative "sessionary/record"
require_relative "sessionary/transport"
require_relative "sessionary/stream"
require_relative "sessionary/client"
require_relative "sessionary/session_handle"
