"""Build step pyproject.toml cannot say: the wheel carries `resources/` (demo
conversations, icons) as `app/_resources`, where app/assets.py looks for them
when the app runs from an installed wheel instead of a checkout."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithResources(build_py):
    def run(self) -> None:
        super().run()
        source = Path(__file__).resolve().parent / "resources"
        target = Path(self.build_lib) / "app" / "_resources"
        shutil.copytree(source, target, dirs_exist_ok=True)


setup(cmdclass={"build_py": BuildWithResources})
