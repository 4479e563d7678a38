import sys

from kube_manager.cli.main import main

sys.exit(main())
