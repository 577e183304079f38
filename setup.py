"""pip install --no-build-isolation .  (after `bash scripts/install-deps.sh`)

Builds the extension with the release CMake preset (reusing build/release when it is already
built) and installs the `lowbit` package from python/lowbit with it.
"""
import os
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        return re.search(r"project\(lowbit VERSION ([0-9.]+)", f.read()).group(1)


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = os.path.join(ROOT, "build", "release")
        # The interpreter the extension is built for: a venv's base interpreter (same ABI), so that the
        # build tree's own tests keep a Python that outlives the venv.
        python = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
        subprocess.check_call(["cmake", "--preset", "release", f"-DPython3_EXECUTABLE={python}"], cwd=ROOT)
        subprocess.check_call(["cmake", "--build", "--preset", "release", "--target", "_lowbit"], cwd=ROOT)
        folder = os.path.join(build, "python", "lowbit")
        built = [f for f in os.listdir(folder) if f.startswith("_lowbit") and f.endswith(".so")]
        if not built:
            raise RuntimeError(f"no _lowbit extension in {folder}")
        dest = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(os.path.join(folder, built[0]), dest)


setup(
    name="lowbit",
    version=version(),
    description="Post-training quantization compiler and CPU inference runtime for CNNs",
    packages=["lowbit"],
    package_dir={"": "python"},
    ext_modules=[Extension("lowbit._lowbit", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.9",
    install_requires=["numpy"],
    zip_safe=False,
)
