"""rdbspec: reads Redis, Valkey and Dragonfly RDB dumps.

    import rdbspec
    with rdbspec.open("dump.rdb") as dump:
        print(dump.header)
        for key in dump.keys():
            print(key.db, key.key, key.type_name, key.value)
"""

from .api import Dump, Header, KeyRecord, open, parse
from .errors import ChecksumError, IntegrityError, ParseError, RdbError, TruncatedError
from .streams import Stream

__all__ = ["ChecksumError", "Dump", "Header", "IntegrityError", "KeyRecord", "ParseError", "RdbError",
           "Stream", "TruncatedError", "open", "parse"]
