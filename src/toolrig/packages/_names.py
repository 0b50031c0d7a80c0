"""The qualified names the scan knows, by what using them means (a table, so a new name is one line)."""

from __future__ import annotations

import functools

__all__ = ["BUILTINS", "CATEGORY_PREFIXES", "DECODERS", "DYNAMIC_IMPORTS", "EXEC", "NETWORK_CALLS",
           "SENSITIVE_MODULES", "WRITE_ATTRIBUTES", "category_of"]

BUILTINS = frozenset({"exec", "eval", "compile", "__import__", "open", "getattr", "globals", "locals", "vars",
                      "breakpoint", "input", "setattr", "chr", "ord", "bytes", "str"})

EXEC = frozenset({"builtins.exec", "builtins.eval", "builtins.compile", "builtins.execfile", "code.interact",
                  "code.InteractiveInterpreter", "code.InteractiveConsole", "types.FunctionType", "types.CodeType",
                  "builtins.breakpoint", "pdb.set_trace", "timeit.timeit", "timeit.repeat", "timeit.Timer"})
DYNAMIC_IMPORTS = frozenset({"builtins.__import__", "importlib.import_module", "importlib.__import__",
                             "importlib.util.spec_from_file_location", "importlib.util.module_from_spec",
                             "importlib.util.spec_from_loader", "importlib.machinery.SourceFileLoader",
                             "importlib.machinery.SourcelessFileLoader", "imp.load_source", "imp.load_module",
                             "imp.load_compiled", "imp.load_dynamic", "runpy.run_path", "runpy.run_module",
                             "zipimport.zipimporter", "pkgutil.get_importer", "importlib.reload",
                             "importlib.machinery.BuiltinImporter.load_module",
                             "importlib.machinery.FrozenImporter.load_module",
                             "importlib.machinery.ExtensionFileLoader"})
DECODERS = frozenset({"base64.b64decode", "base64.b32decode", "base64.b16decode", "base64.b85decode",
                      "base64.a85decode", "base64.urlsafe_b64decode", "base64.standard_b64decode",
                      "base64.decodebytes", "base64.decode", "binascii.a2b_base64", "binascii.a2b_hex",
                      "binascii.unhexlify", "binascii.a2b_uu", "zlib.decompress", "bz2.decompress",
                      "lzma.decompress", "gzip.decompress", "codecs.decode", "codecs.getdecoder", "marshal.loads",
                      "marshal.load", "builtins.bytes.fromhex", "bytes.fromhex", "pickle.loads", "quopri.decodestring",
                      "builtins.bytearray.fromhex"})

# (prefix, category); the longest matching prefix decides. A prefix ending in "." matches a module's members; a
# dotted prefix also matches the names it begins (``os.exec`` matches ``os.execvp``).
CATEGORY_PREFIXES: tuple[tuple[str, str], ...] = (
    ("subprocess", "subprocess"), ("pty", "subprocess"), ("pexpect", "subprocess"), ("sh.", "subprocess"),
    ("plumbum", "subprocess"), ("commands", "subprocess"), ("popen2", "subprocess"),
    ("os.system", "subprocess"), ("os.popen", "subprocess"), ("os.exec", "subprocess"), ("os.spawn", "subprocess"),
    ("os.posix_spawn", "subprocess"), ("os.fork", "subprocess"), ("os.forkpty", "subprocess"),
    ("os.startfile", "subprocess"), ("posix.system", "subprocess"), ("posix.fork", "subprocess"),
    ("asyncio.create_subprocess", "subprocess"), ("platform.popen", "subprocess"),
    ("multiprocessing", "subprocess"), ("concurrent.futures.ProcessPoolExecutor", "subprocess"),
    ("concurrent.futures.process", "subprocess"), ("asyncio.subprocess", "subprocess"),
    ("_posixsubprocess", "subprocess"), ("_winapi.CreateProcess", "subprocess"), ("distutils.spawn", "subprocess"),
    ("pydoc.pipepager", "subprocess"), ("pydoc.tempfilepager", "subprocess"), ("pydoc.pager", "subprocess"),
    ("pydoc.getpager", "subprocess"),
    ("socket", "network"), ("_socket", "network"), ("ssl", "network"), ("urllib.request", "network"),
    ("urllib2", "network"), ("http.client", "network"), ("httplib", "network"), ("requests", "network"),
    ("httpx", "network"), ("aiohttp", "network"), ("urllib3", "network"), ("ftplib", "network"),
    ("smtplib", "network"), ("telnetlib", "network"), ("poplib", "network"), ("imaplib", "network"),
    ("nntplib", "network"), ("xmlrpc.client", "network"), ("websocket", "network"), ("websockets", "network"),
    ("asyncio.open_connection", "network"), ("asyncio.open_unix_connection", "network"), ("pycurl", "network"),
    ("paramiko", "network"), ("grpc", "network"), ("socketserver", "network"), ("http.server", "network"),
    ("dns", "network"), ("httplib2", "network"), ("tornado.httpclient", "network"), ("webbrowser", "network"),
    ("os.environ", "env"), ("os.environb", "env"), ("os.getenv", "env"), ("os.getenvb", "env"),
    ("posix.environ", "env"), ("os.putenv", "env"), ("os.unsetenv", "env"),
    ("os.remove", "write"), ("os.unlink", "write"), ("os.rmdir", "write"), ("os.removedirs", "write"),
    ("os.rename", "write"), ("os.renames", "write"), ("os.replace", "write"), ("os.mkdir", "write"),
    ("os.makedirs", "write"), ("os.chmod", "write"), ("os.lchmod", "write"), ("os.chown", "write"),
    ("os.lchown", "write"), ("os.link", "write"), ("os.symlink", "write"), ("os.truncate", "write"),
    ("os.utime", "write"), ("os.mkfifo", "write"), ("os.mknod", "write"), ("os.open", "write"),
    ("shutil.copy", "write"), ("shutil.move", "write"), ("shutil.rmtree", "write"), ("shutil.make_archive", "write"),
    ("shutil.unpack_archive", "write"), ("shutil.chown", "write"), ("shutil.copyfile", "write"),
    ("shutil.copytree", "write"), ("shutil.copy2", "write"), ("shutil.copymode", "write"),
    ("shutil.copystat", "write"), ("tarfile.TarFile.extractall", "write"), ("zipfile.ZipFile.extractall", "write"),
    ("ctypes", "native"), ("_ctypes", "native"), ("cffi", "native"),
    ("marshal", "code"), ("pickle.load", "pickle"), ("dill", "pickle"), ("cloudpickle", "pickle"),
)

SENSITIVE_MODULES = frozenset({"builtins", "os", "posix", "nt", "subprocess", "importlib", "sys", "socket", "pty",
                               "ctypes", "shutil", "marshal", "code", "runpy", "imp", "io", "codecs", "base64", "zlib",
                               "requests", "httpx", "urllib", "urllib.request", "http.client", "aiohttp"})

# Calls that take a URL (or host) among their first arguments, by their last name; matched on any object, since
# the object (a client made elsewhere) is rarely known statically.
NETWORK_CALLS = frozenset({"get", "post", "put", "patch", "delete", "head", "options", "request", "stream", "send",
                           "urlopen", "Request", "urlretrieve", "HTTPConnection", "HTTPSConnection",
                           "create_connection", "connect", "connect_ex", "ws_connect", "open_connection", "Client",
                           "AsyncClient", "ClientSession", "Session", "fetch", "sendto", "PoolManager",
                           "ProxyManager", "FTP", "SMTP", "SMTP_SSL"})
WRITE_ATTRIBUTES = frozenset({"write_text", "write_bytes", "touch", "symlink_to", "hardlink_to", "unlink", "rmdir",
                              "mkdir", "extractall", "extract", "chmod", "lchmod"})


# The modules ``os`` re-exports its system calls from: ``posix.execv`` and ``nt.system`` are ``os.execv`` and
# ``os.system``, whatever the table spells.
_OS_BACKENDS = ("posix.", "nt.")


@functools.lru_cache(maxsize=4096)
def category_of(qualified: str) -> str | None:
    """``subprocess``, ``network``, ``env``, ``write``, ``native``, ``code``, ``pickle`` or None."""
    if qualified.startswith(_OS_BACKENDS):
        return category_of("os." + qualified.split(".", 1)[1])
    best: tuple[int, str] | None = None
    for prefix, category in CATEGORY_PREFIXES:
        if prefix.endswith("."):
            hit = qualified.startswith(prefix)
        else:
            partial = "." in prefix and qualified.startswith(prefix) and "." not in qualified[len(prefix):]
            hit = qualified == prefix or qualified.startswith(prefix + ".") or partial
        if hit and (best is None or len(prefix) > best[0]):
            best = (len(prefix), category)
    return None if best is None else best[1]
