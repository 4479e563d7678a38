import sys

from kube_manager.cli import main

sys.exit(main())
