"""Limits shared by every layer: what the wire accepts is what the tables can hold."""

ID_LENGTH = 128  # app names, user ids, session and event ids: a column width, a path rule
_ID_CHAR = r"[^/\x00-\x1f\x7f-\x9f]"  # no `/`, no control characters
_ID_CHAR_NOT_DOT = r"[^/.\x00-\x1f\x7f-\x9f]"
# Not `.` or `..` either: a URL's dot segments, which clients resolve before sending, so that
# removing event `..` would delete its session. Spelt without a lookahead, which pydantic's
# regex engine lacks: a first character other than a dot, or a dot and then one other than a
# dot, or two dots and then anything.
ID_PATTERN = rf"^(?:{_ID_CHAR_NOT_DOT}{_ID_CHAR}*|\.{_ID_CHAR_NOT_DOT}{_ID_CHAR}*|\.\.{_ID_CHAR}+)$"
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# The highest version (and so seq) a session may reach: past 2^53 - 1 a JSON reader that reads
# numbers as doubles (JavaScript's) takes two seqs for one. A check on `sessions.version`
# (migration 0021) refuses any write that would pass it.
MAX_VERSION = 2**53 - 1
# Epoch seconds of years 1 to 9999: what PostgreSQL timestamps and Python datetimes both hold.
MIN_TIMESTAMP, MAX_TIMESTAMP = -62135596800.0, 253402300799.0
# The `:verb` suffixes of session paths (Google AIP-136), matched before an id: a session id
# ending in one (`x:fork`) could not be told from the verb on its path, so create refuses it.
SESSION_VERBS = (
    "fork",
    "close",
    "rewind",
    "trim",
    "reset",
    "compact",
    "heal",
    "export",
    "remember",
)
# The verbs of a user's path (`…/users/{id}:export`), which a user id ending in one would hide.
USER_VERBS = ("export", "import")
# The verb of a memory's path (`…/memories/{id}:rollback`), which no memory id ends in.
MEMORY_VERB = "rollback"
DISPLAY_NAME_LENGTH = 1024
# Labels: a few short tags to filter sessions by (`label=key:value`), so a key holds no `:`.
MAX_LABELS = 64
LABEL_KEY_PATTERN = r"^[^:\x00-\x1f\x7f-\x9f]{1,63}$"
LABEL_VALUE_LENGTH = 256
# The shortest life a session may be given (its create must be able to read it back), and
# the longest (a century: now plus it stays a time Python and the wire can hold).
MIN_LIFETIME, MAX_LIFETIME = 1.0, 100 * 365.25 * 86400
# Artifact names: ADK's file names, `/` allowed between segments (`reports/q1.pdf`), at most
# this many UTF-8 bytes, so that a name and a session's three ids fit one btree entry.
ARTIFACT_NAME_BYTES = 1024
# An artifact's MIME type as a `Content-Type` carries it (RFC 6838 allows 127 + 1 + 127).
MIME_TYPE_LENGTH = 255
