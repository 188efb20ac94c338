"""The package's own PEP 517 (and PEP 660) build backend, standard library only.

Why not setuptools: `pip install ./clients/python` must work on a machine with no package index.
With build isolation pip installs the backend from an index first (setuptools>=61 was not found),
and Debian 12's own setuptools (66) needs `wheel` and `--no-build-isolation` besides. A pure-Python
package of a dozen modules needs no compiler or plugin: a wheel is a zip with three metadata files,
an sdist a tar; pip runs this file from the source tree (`backend-path`), so nothing is fetched.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PACKAGE = "pi_gateway"


def _project():
    """[project] of pyproject.toml: the few keys this backend writes into the metadata."""
    with open(os.path.join(_ROOT, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    section = re.search(r"^\[project\]\n(.*?)(?=^\[|\Z)", text, re.M | re.S).group(1)

    def value(key):
        match = re.search(r'^%s\s*=\s*"([^"]*)"' % key, section, re.M)
        return match.group(1) if match else None

    license_text = re.search(r'^license\s*=\s*\{\s*text\s*=\s*"([^"]*)"', section, re.M)
    return {
        "name": value("name"),
        "version": value("version"),
        "description": value("description"),
        "requires_python": value("requires-python"),
        "readme": value("readme"),
        "license": license_text.group(1) if license_text else None,
    }


def _dist_name(project):
    return re.sub(r"[-_.]+", "_", project["name"]).lower()


def _metadata(project):
    lines = [
        "Metadata-Version: 2.1",
        "Name: %s" % project["name"],
        "Version: %s" % project["version"],
    ]
    if project["description"]:
        lines.append("Summary: %s" % project["description"])
    if project["license"]:
        lines.append("License: %s" % project["license"])
    if project["requires_python"]:
        lines.append("Requires-Python: %s" % project["requires_python"])
    body = ""
    if project["readme"]:
        lines.append("Description-Content-Type: text/markdown")
        with open(os.path.join(_ROOT, project["readme"]), encoding="utf-8") as f:
            body = f.read()
    return ("\n".join(lines) + "\n\n" + body).encode("utf-8")


def _package_files():
    """(path in the wheel, path on disk) for every file the package ships: modules and py.typed."""
    source = os.path.join(_ROOT, "src", _PACKAGE)
    for name in sorted(os.listdir(source)):
        if name.endswith(".py") or name == "py.typed":
            yield "%s/%s" % (_PACKAGE, name), os.path.join(source, name)


def _write_wheel(directory, project, entries):
    """entries: (archive path, bytes). Adds the .dist-info files and RECORD; returns the file name."""
    dist = "%s-%s" % (_dist_name(project), project["version"])
    info = "%s.dist-info" % dist
    wheel_text = "Wheel-Version: 1.0\nGenerator: pi_gateway_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    entries = list(entries) + [
        ("%s/METADATA" % info, _metadata(project)),
        ("%s/WHEEL" % info, wheel_text.encode()),
        ("%s/top_level.txt" % info, (_PACKAGE + "\n").encode()),
    ]
    record = []
    filename = "%s-py3-none-any.whl" % dist
    with zipfile.ZipFile(os.path.join(directory, filename), "w", zipfile.ZIP_DEFLATED) as wheel:
        for path, data in entries:
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append("%s,sha256=%s,%d" % (path, digest, len(data)))
            wheel.writestr(_zipinfo(path), data)
        record.append("%s/RECORD,," % info)
        wheel.writestr(_zipinfo("%s/RECORD" % info), ("\n".join(record) + "\n").encode())
    return filename


def _zipinfo(path):
    # A fixed date and mode: the same sources make the same wheel.
    info = zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0))
    info.external_attr = 0o644 << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, _project(), ((p, _read(d)) for p, d in _package_files()))


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """PEP 660: a .pth file that puts src/ on sys.path, so edits take effect without reinstalling."""
    project = _project()
    pth = ("%s\n" % os.path.join(_ROOT, "src")).encode()
    return _write_wheel(wheel_directory, project, [("__editable__.%s.pth" % _dist_name(project), pth)])


def build_sdist(sdist_directory, config_settings=None):
    project = _project()
    base = "%s-%s" % (_dist_name(project), project["version"])
    filename = base + ".tar.gz"
    paths = ["pyproject.toml", "README.md", "build_backend/pi_gateway_build.py"]
    paths += [os.path.relpath(d, _ROOT) for _, d in _package_files()]
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz", format=tarfile.PAX_FORMAT) as sdist:
        for rel in paths:
            sdist.add(os.path.join(_ROOT, rel), arcname="%s/%s" % (base, rel), recursive=False)
        pkg_info = _metadata(project)
        info = tarfile.TarInfo("%s/PKG-INFO" % base)
        info.size = len(pkg_info)
        sdist.addfile(info, io.BytesIO(pkg_info))
    return filename
