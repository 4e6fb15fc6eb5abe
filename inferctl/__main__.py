import sys

from inferctl.cli import main

sys.exit(main())
