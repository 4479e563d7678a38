"""kube-manager: Kubernetes NetworkPolicy to Contrail firewall policy."""
from setuptools import find_packages, setup

setup(
    name="kube-manager",
    version="0.1.0",
    description="Keeps the Contrail config API in step with Kubernetes NetworkPolicies",
    python_requires=">=3.9",
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
            "responses>=0.23",
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
