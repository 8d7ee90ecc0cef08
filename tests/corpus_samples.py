# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One reader of the agent-output corpus (tests/corpus/agent_outputs) for the tests that replay a sample."""
from __future__ import annotations

import pathlib

CORPUS = pathlib.Path(__file__).resolve().parent / 'corpus' / 'agent_outputs'


def corpus_text(sample_id):
    """The verbatim text of the real sample ``sample_id``."""
    import yaml
    for name in ('claude.yml', 'codex.yml', 'gemini.yml'):
        for sample in yaml.safe_load((CORPUS / name).read_text(encoding='utf-8')):
            if sample['id'] == sample_id:
                return sample['text']
    raise KeyError(sample_id)


CAPTURES = CORPUS.parent / 'captures'


def capture(capture_id):
    """The real capture ``capture_id`` of tests/corpus/captures (its ``text``, ``argv``, ``exit_code``, ...)."""
    import yaml
    for path in sorted(CAPTURES.glob('*.yml')):
        for sample in yaml.safe_load(path.read_text(encoding='utf-8')):
            if sample['id'] == capture_id:
                return sample
    raise KeyError(capture_id)
