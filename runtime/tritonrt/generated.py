"""The package that modules loaded by ``tritonrt.load`` live in: ``tritonrt.generated``.

A loaded module's name holds the absolute path of its file (base32, after the stem and a
counter: ``tritonrt.generated.model_0__<path>``), and importing this package installs a
finder that imports such a name from that path. So a model pickled whole
(``torch.save(model)``) loads in any process that can import ``tritonrt`` -- a fresh one,
a ``spawn`` DataLoader worker -- while its file is where it was, and a model never binds to
another file that has the same stem.
"""

import base64
import importlib.abc
import importlib.util
import os
import sys

PREFIX = __name__ + "."
__path__ = []  # a package: its modules come from the finder below (and tritonrt.load)


def module_name(path, stem, number):
    """The module name ``tritonrt.load`` gives the ``number``-th load of the file ``path``."""
    token = base64.b32encode(os.fsencode(path)).decode("ascii").rstrip("=").lower()
    return "%s%s_%d__%s" % (PREFIX, stem, number, token)


def path_of(name):
    """The file a module name of ``module_name`` stands for, or None."""
    if not name.startswith(PREFIX):
        return None
    token = name[len(PREFIX):].rpartition("__")[2]
    if not token:
        return None
    try:
        raw = base64.b32decode(token.upper() + "=" * (-len(token) % 8))
    except (ValueError, TypeError):
        return None
    return os.fsdecode(raw)


class _Finder(importlib.abc.MetaPathFinder):
    """Imports ``tritonrt.generated.<stem>_<n>__<path>`` from ``<path>``."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(PREFIX):
            return None
        file = path_of(fullname)
        if file is None:
            return None
        if not os.path.isfile(file):
            raise ImportError(
                "tritonrt: the module %s was loaded from %s, which no longer exists; compile "
                "the model again, or rebuild it and load its state_dict instead of a whole "
                "pickled model" % (fullname.rpartition("__")[0], file), name=fullname)
        return importlib.util.spec_from_file_location(fullname, file)


if not any(isinstance(f, _Finder) for f in sys.meta_path):
    sys.meta_path.append(_Finder())
