import sys

from kubernetes_mgmt.cli import main

sys.exit(main())
