"""xlat: an address-translation laboratory."""
from ._core import version as _engine_version

__version__ = _engine_version()
