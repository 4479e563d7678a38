"""kube-manager: Kubernetes NetworkPolicy to Contrail firewall policy."""
import os
import re

from setuptools import find_packages, setup


def _version() -> str:
    """VERSION from kube_manager/version.py, read as text: the one place it is written."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kube_manager", "version.py")
    with open(path, encoding="utf-8") as stream:
        return re.search(r'^VERSION = "([^"]+)"$', stream.read(), re.M).group(1)


setup(
    name="kube-manager",
    version=_version(),
    description="Keeps the Contrail config API in step with Kubernetes NetworkPolicies",
    # @dataclass(slots=True) needs 3.10; CI runs the inner loop on 3.10 and the newest CPython.
    python_requires=">=3.10",
    classifiers=[
        "Programming Language :: Python :: 3",
        "Programming Language :: Python :: 3 :: Only",
        "Programming Language :: Python :: 3.10",
        "Programming Language :: Python :: 3.11",
        "Programming Language :: Python :: 3.12",
        "Programming Language :: Python :: 3.13",
        "Operating System :: POSIX :: Linux",
    ],
    packages=find_packages(include=["kube_manager*", "vnc_client*", "introspect*", "simulators*"]),
    package_data={"introspect": ["templates/*.html", "static/*"]},
    install_requires=[
        "gevent>=22.10",
        "kubernetes>=28.1",
        "requests>=2.28",
        "jinja2>=3.1",
        "pyyaml>=6.0",
        # JSON cluster dumps for the offline commands (SPEC 8); the stdlib json module is the fallback.
        "orjson>=3.8",
        "prometheus_client>=0.17",
    ],
    extras_require={
        "test": [
            "pytest>=7.4",
            "hypothesis>=6.80",
            # The official Contrail client library, used only in tests as a schema oracle.
            "contrail-api-client>=2005",
            "future",
            "six",
            "selenium>=4.15",
            # Static type check run by .ci/run, with the stubs of the libraries that ship none.
            "mypy>=2.4",
            "types-PyYAML",
            "types-requests",
        ],
    },
    entry_points={"console_scripts": ["contrail-kube-manager=kube_manager.cli.main:main"]},
)
