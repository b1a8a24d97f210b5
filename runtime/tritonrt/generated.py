"""The package that modules loaded by ``tritonrt.load`` live in: ``tritonrt.generated``.

A loaded module's name holds a digest of its file's contents and the file's absolute path
(base32): ``tritonrt.generated.model_0__<digest>_<path>``, and importing this package
installs a finder that imports such a name from that path, when the file still holds what
it held. So a model pickled whole (``torch.save(model)``) loads in any process that can
import ``tritonrt`` -- a fresh one, a ``spawn`` DataLoader worker -- while its file is
where and what it was; a model never binds to another file that has the same stem, nor to
the same file compiled again from an edited source (that is an ``ImportError`` saying so).
"""

import base64
import hashlib
import importlib.abc
import importlib.util
import os
import sys

PREFIX = __name__ + "."
__path__ = []  # a package: its modules come from the finder below (and tritonrt.load)


def digest(path):
    """The first 16 hex digits of the SHA-256 of the file's contents."""
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


def module_name(path, stem, number, contents):
    """The module name ``tritonrt.load`` gives the ``number``-th load of the file ``path``
    whose ``digest`` is ``contents``."""
    token = base64.b32encode(os.fsencode(path)).decode("ascii").rstrip("=").lower()
    return "%s%s_%d__%s_%s" % (PREFIX, stem, number, contents, token)


def parse(name):
    """(contents digest, file) of a module name of ``module_name``, or None."""
    if not name.startswith(PREFIX):
        return None
    contents, _, token = name[len(PREFIX):].rpartition("__")[2].partition("_")
    if not contents or not token:
        return None
    try:
        raw = base64.b32decode(token.upper() + "=" * (-len(token) % 8))
    except (ValueError, TypeError):
        return None
    return contents, os.fsdecode(raw)


class _Finder(importlib.abc.MetaPathFinder):
    """Imports ``tritonrt.generated.<stem>_<n>__<digest>_<path>`` from ``<path>``."""

    def find_spec(self, fullname, path=None, target=None):
        parsed = parse(fullname)
        if parsed is None:
            return None
        contents, file = parsed
        short = fullname[len(PREFIX):].rpartition("__")[0]
        if not os.path.isfile(file):
            raise ImportError(
                "tritonrt: the module %s was loaded from %s, which no longer exists; compile "
                "the model again, or rebuild it and load its state_dict instead of a whole "
                "pickled model" % (short, file), name=fullname)
        if digest(file) != contents:
            raise ImportError(
                "tritonrt: the module %s was loaded from %s, which has changed since (compiled "
                "again?): a model saved whole runs the code it was saved with; build the model "
                "from the new file and load the old one's state_dict into it" % (short, file),
                name=fullname)
        return importlib.util.spec_from_file_location(fullname, file)


if not any(isinstance(f, _Finder) for f in sys.meta_path):
    sys.meta_path.append(_Finder())
