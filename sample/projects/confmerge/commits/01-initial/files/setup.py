from setuptools import setup

setup(
    name="confmerge",
    version="0.1.0",
    description="Parse INI-style configuration text and merge layered configs",
    author="Hana Kovač",
    license="MIT",
    py_modules=["confmerge"],
    python_requires=">=3.8",
)
