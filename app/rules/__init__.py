"""Pure rules: the service's logic that needs no I/O, tested without a database.

ADK's state scopes (`scopes`), how an event is prepared for storage and recognised when it is
sent again (`events`), and the limits every layer shares (`limits`). Services call these; they
call nothing that waits.
"""
