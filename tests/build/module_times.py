# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Print each test module's summed time from a pytest JUnit XML file, longest first.

tests/run's integration phase hands modules to xdist workers longest first; this is the reading
that order is kept from (a long module handed out last is the run's tail).
"""
from __future__ import annotations

import collections
import sys
import xml.etree.ElementTree as ET


def module_times(path):
    """Return [(module, seconds, tests)] summed over the file's test cases, longest first."""
    total = collections.defaultdict(float)
    count = collections.Counter()
    for case in ET.parse(path).getroot().iter('testcase'):
        parts = case.get('classname', '').split('.')
        module = next((p for p in parts if p.startswith('test_')), parts[-1] or '?')
        total[module] += float(case.get('time') or 0)
        count[module] += 1
    return sorted(((m, total[m], count[m]) for m in total), key=lambda row: -row[1])


def main(argv):
    for module, seconds, tests in module_times(argv[1]):
        print('module %-28s %7.0f s  %3d tests' % (module, seconds, tests))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
