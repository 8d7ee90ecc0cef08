# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run one real agent CLI against the scripted endpoint and keep what it printed (a capture).

    python -m tests.fakes.model_endpoint.drive --cli claude --scenario commit --bin DIR --out FILE.json

Each run gets a throwaway ``HOME`` holding the CLI's config and login-state files (``setup``), a
throwaway git repository as its working directory, a fake key, telemetry and auto-update off, the
CLI's non-interactive permission switch, and the brief on standard input as the runner gives it.
``--retries N`` sets the CLI's own retry knob where it has one (``RETRY_KNOBS``); without it the CLI
retries as it does by default. The capture (JSON) holds the argv, the exit code, stdout, stderr,
the duration, the CLI version, the endpoint's request log and the repository's commits.

``SCENARIOS`` are the outcomes every CLI is tried against; ``refused`` runs with no server at all.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from . import Endpoint

BRIEF = ('Create a file hello.txt containing "hi" in the current git repository and commit it with the '
         'message "add hello". Then reply with the single word done.\n')
COMMIT = "printf 'hi\\n' > hello.txt && git add hello.txt && git commit -q -m 'add hello' && git log --oneline -1"
SCENARIOS = {
    'commit': [{'shell': COMMIT}, {'text': 'done'}],
    'claim': [{'text': 'Done: I created hello.txt and committed it as "add hello".'}],
    'throttle': [{'error': 'throttle'}],
    'bad_key': [{'error': 'bad_key'}],
    'overloaded': [{'error': 'overloaded'}],
    'server_error': [{'error': 'server_error'}],
    'usage_limit': [{'error': 'usage_limit'}],
    'quota': [{'error': 'quota'}],
    'too_long': [{'error': 'too_long'}],
    'refused': None,
}
MODELS = {'claude': 'claude-sonnet-4-5', 'codex': 'gpt-5.5', 'gemini': 'gemini-2.5-pro', 'qwen': 'qwen3-coder-plus'}
FAKE_KEY = {'claude': 'sk-ant-api03-fake', 'codex': 'sk-fake-0000', 'gemini': 'AIzaFakeKey0000', 'qwen': 'sk-fake-0000'}
# the CLI's own knob for fewer internal retries: env var name, or a codex config key
RETRY_KNOBS = {'claude': 'CLAUDE_CODE_MAX_RETRIES', 'codex': 'request_max_retries/stream_max_retries',
               'gemini': 'settings general.maxAttempts (= retries + 1)',
               'qwen': 'settings model.generationConfig.maxRetries'}


def _free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w', encoding='utf-8') as handle:
        handle.write(text)


def setup(cli, home, url, retries=None, oauth=False):
    """The CLI's files in ``home`` and its environment (on top of a minimal base) for ``url``; ``oauth``:
    Claude Code with a subscription token (``CLAUDE_CODE_OAUTH_TOKEN``) instead of an API key."""
    env = {'HOME': home, 'PATH': os.environ['PATH'], 'LANG': 'C.UTF-8', 'TERM': 'dumb', 'NO_COLOR': '1', 'CI': '1',
           'GIT_AUTHOR_NAME': 'agent', 'GIT_AUTHOR_EMAIL': 'agent@example.invalid',
           'GIT_COMMITTER_NAME': 'agent', 'GIT_COMMITTER_EMAIL': 'agent@example.invalid'}
    if cli == 'claude':
        _write(os.path.join(home, '.claude.json'), json.dumps({'hasCompletedOnboarding': True,
                                                               'bypassPermissionsModeAccepted': True}))
        env.update({'ANTHROPIC_BASE_URL': url, 'ANTHROPIC_API_KEY': FAKE_KEY[cli], 'IS_SANDBOX': '1',
                    'DISABLE_TELEMETRY': '1', 'DISABLE_AUTOUPDATER': '1', 'DISABLE_ERROR_REPORTING': '1',
                    'CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC': '1', 'ANTHROPIC_MODEL': MODELS[cli]})
        if oauth:
            env['CLAUDE_CODE_OAUTH_TOKEN'] = env.pop('ANTHROPIC_API_KEY').replace('api03', 'oat01')
        if retries is not None:
            env['CLAUDE_CODE_MAX_RETRIES'] = str(retries)
    elif cli == 'codex':
        codex_home = os.path.join(home, '.codex')
        knobs = '' if retries is None else 'request_max_retries = %d\nstream_max_retries = %d\n' % (retries, retries)
        _write(os.path.join(codex_home, 'config.toml'),
               'model = "%s"\nmodel_provider = "fake"\ncheck_for_update_on_startup = false\n\n'
               '[model_providers.fake]\nname = "fake"\nbase_url = "%s/v1"\nenv_key = "FAKE_PROVIDER_KEY"\n'
               'wire_api = "responses"\n%s\n[analytics]\nenabled = false\n' % (MODELS[cli], url, knobs))
        env.update({'CODEX_HOME': codex_home, 'FAKE_PROVIDER_KEY': FAKE_KEY[cli]})
    elif cli == 'gemini':
        _write(os.path.join(home, '.gemini', 'settings.json'), json.dumps({
            'security': {'auth': {'selectedType': 'gemini-api-key'}},
            'privacy': {'usageStatisticsEnabled': False}, 'telemetry': {'enabled': False},
            'general': dict({'disableAutoUpdate': True, 'disableUpdateNag': True},
                            **({} if retries is None else {'maxAttempts': retries + 1}))}))
        env.update({'GEMINI_API_KEY': FAKE_KEY[cli], 'GOOGLE_GEMINI_BASE_URL': url, 'GEMINI_MODEL': MODELS[cli],
                    'GEMINI_CLI_TRUST_WORKSPACE': 'true'})
    elif cli == 'qwen':
        settings = {'security': {'auth': {'selectedType': 'openai'}},
                    'privacy': {'usageStatisticsEnabled': False}, 'telemetry': {'enabled': False},
                    'general': {'disableAutoUpdate': True, 'disableUpdateNag': True}}
        if retries is not None:
            settings['model'] = {'generationConfig': {'maxRetries': retries}}
        _write(os.path.join(home, '.qwen', 'settings.json'), json.dumps(settings))
        env.update({'OPENAI_API_KEY': FAKE_KEY[cli], 'OPENAI_BASE_URL': url + '/v1', 'OPENAI_MODEL': MODELS[cli],
                    'QWEN_CODE_SUPPRESS_YOLO_WARNING': '1'})
    return env


def argv(cli, fmt):
    """The non-interactive command line, as the runner's profile gives it, plus the permission switch."""
    if cli == 'claude':
        return ['claude', '-p', '--output-format', fmt, '--dangerously-skip-permissions'] + (
            ['--verbose'] if fmt == 'stream-json' else [])
    if cli == 'codex':
        return ['codex', 'exec', '--json', '--dangerously-bypass-approvals-and-sandbox', '--skip-git-repo-check', '-']
    if cli in ('gemini', 'qwen'):
        return [cli, '--output-format', fmt, '--yolo', '-p', 'Follow the brief given on standard input.']
    raise KeyError(cli)


def version(cli, bindir):
    out = subprocess.run([os.path.join(bindir, cli), '--version'], check=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True, timeout=60)
    return out.stdout.strip().splitlines()[-1] if out.stdout.strip() else None


def _run(args, stdin, cwd, env, timeout):
    """``(exit_code, stdout, stderr, merged, timed_out)``: both streams, and the two merged in the order
    their lines arrived (what the runner's capture file holds, stderr joined to stdout)."""
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                            env=env, start_new_session=True)
    lines, lock = [], threading.Lock()

    def pump(name, pipe):
        for line in iter(pipe.readline, b''):
            with lock:
                lines.append((name, line))
        pipe.close()
    pumps = [threading.Thread(target=pump, args=(n, p), daemon=True)
             for n, p in (('stdout', proc.stdout), ('stderr', proc.stderr))]
    for t in pumps:
        t.start()
    proc.stdin.write(stdin.encode('utf-8'))
    proc.stdin.close()
    timed_out = False
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    for t in pumps:
        t.join(5)

    def text(which):
        return b''.join(l for n, l in lines if n in which).decode('utf-8', 'replace')
    return (None if timed_out else proc.returncode), text(('stdout',)), text(('stderr',)), \
        text(('stdout', 'stderr')), timed_out


def run(cli, scenario, bindir, fmt='json', retries=None, timeout=240, extra_env=None, oauth=False):
    """One run; the capture as a dict."""
    steps = SCENARIOS[scenario] if isinstance(scenario, str) else scenario
    # not under /tmp: Codex refuses to make its helper binaries under a temporary dir and says so on stderr
    with tempfile.TemporaryDirectory(prefix='agent-run-', dir=os.environ.get('AGENT_RUN_DIR', '/var/tmp')) as tmp:
        home, repo = os.path.join(tmp, 'home'), os.path.join(tmp, 'repo')
        os.makedirs(home)
        os.makedirs(repo)
        subprocess.run(['git', 'init', '-q', '-b', 'main', repo], check=True)
        endpoint = None
        if steps is None:
            url = 'http://127.0.0.1:%d' % _free_port()  # nothing listens: connection refused
        else:
            endpoint = Endpoint({'steps': steps, 'model': MODELS[cli]})
            url = endpoint.start()
        env = setup(cli, home, url, retries, oauth)
        env['PATH'] = bindir + os.pathsep + env['PATH']
        env.update(extra_env or {})
        args = argv(cli, fmt)
        started = time.time()
        code, out, err, merged, timed_out = _run(args, BRIEF, repo, env, timeout)
        duration = round(time.time() - started, 1)
        if endpoint is not None:
            endpoint.stop()
        commits = subprocess.run(['git', '-C', repo, 'log', '--oneline'], check=False, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, universal_newlines=True).stdout.strip()
    return {'cli': cli, 'version': version(cli, bindir), 'scenario': scenario if isinstance(scenario, str) else 'custom',
            'auth': 'oauth' if oauth else 'key',
            'format': fmt, 'argv': args, 'retries': retries, 'knob': RETRY_KNOBS.get(cli), 'exit_code': code,
            'timed_out': timed_out, 'timeout_s': timeout, 'duration_s': duration, 'started': started,
            'stdout': out, 'stderr': err, 'merged': merged, 'commits': commits,
            'requests': endpoint.requests if endpoint is not None else []}


def main(argv_=None):
    p = argparse.ArgumentParser(prog='python -m tests.fakes.model_endpoint.drive', description=__doc__)
    p.add_argument('--cli', required=True, choices=sorted(MODELS))
    p.add_argument('--scenario', required=True, help='a name of SCENARIOS, or a scenario JSON file')
    p.add_argument('--bin', required=True, help='the directory holding the CLI (node_modules/.bin)')
    p.add_argument('--format', default='json', help='json | stream-json (claude, gemini)')
    p.add_argument('--retries', type=int, default=None, help='the CLI\'s own retry knob, where it has one')
    p.add_argument('--timeout', type=float, default=240)
    p.add_argument('--oauth', action='store_true', help='claude: a subscription token instead of an API key')
    p.add_argument('--out', help='write the capture here (JSON); default: stdout')
    args = p.parse_args(argv_)
    scenario = args.scenario
    if scenario not in SCENARIOS:
        with open(scenario, 'r', encoding='utf-8') as handle:
            scenario = json.load(handle)
            scenario = scenario.get('steps') if isinstance(scenario, dict) else scenario
    capture = run(args.cli, scenario, os.path.abspath(args.bin), args.format, args.retries, args.timeout, oauth=args.oauth)
    text = json.dumps(capture, indent=1, sort_keys=True)
    if args.out:
        _write(args.out, text + '\n')
    else:
        sys.stdout.write(text + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
