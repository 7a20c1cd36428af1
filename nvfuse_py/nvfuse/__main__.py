"""python -m nvfuse --version: nvfuse's version and what it was built
against and runs with (nvfuse.build_info())."""

import argparse
import sys


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m nvfuse", description=__doc__)
    parser.add_argument(
        "--version",
        action="store_true",
        help="print nvfuse's version, the torch and CUDA versions it was "
        "built against, and those of this environment",
    )
    args = parser.parse_args(argv)
    if not args.version:
        parser.print_help()
        return 0
    import nvfuse

    info = nvfuse.build_info()
    width = max(len(k) for k in info)
    for key, value in info.items():
        print(f"{key:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
