# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``python -m tests.fakes.model_endpoint --scenario FILE [--port N] [--log FILE]``: serve one scenario
until killed; prints the base URL on its first line."""
from __future__ import annotations

import argparse
import sys

from . import Endpoint, load_scenario


def main(argv=None):
    p = argparse.ArgumentParser(prog='python -m tests.fakes.model_endpoint', description=__doc__)
    p.add_argument('--scenario', help='a JSON (or YAML) scenario file; default: one "done" reply')
    p.add_argument('--port', type=int, default=0, help='0: any free port')
    p.add_argument('--host', default='127.0.0.1')
    p.add_argument('--log', help='append every request here as one JSON line')
    args = p.parse_args(argv)
    scenario = load_scenario(args.scenario) if args.scenario else None
    endpoint = Endpoint(scenario, host=args.host, port=args.port, log=args.log)
    endpoint.start()
    sys.stdout.write(endpoint.url + '\n')
    sys.stdout.flush()
    try:
        endpoint._thread.join()
    except KeyboardInterrupt:
        pass
    finally:
        endpoint.stop()
    return 0


if __name__ == '__main__':
    sys.exit(main())
