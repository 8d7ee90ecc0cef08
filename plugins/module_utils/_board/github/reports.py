# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The announcer's reports on a GitHub board (D14): issues labelled ``fleet-report`` in the board's repository.

Read live through REST (never the search API, whose index lags); a report is never added to the
project, so it is never a candidate.
"""

from __future__ import annotations

from typing import Any, Dict, List

from .reads import GitHubReads
from .transport import error_text
from ..protocol import BoardError
from ..._core.dispatch.announce import REPORT_LABEL, SILENCED_LABEL
from ..._core.board.references import defang


class GitHubReports(GitHubReads):
    """``reports`` and ``create_report``."""

    def _report_repo(self) -> str:
        """The board's repository: the spec's ``repo``, else the one repository of the project's items."""
        if self.default_repo:
            return self.default_repo
        if not self._project_items:
            self._index_project()
        repos = sorted(set(r for (r, _n) in self._project_items))
        if len(repos) != 1:
            raise BoardError('the announcer files its reports in the board\'s repository, and project %s has %s: '
                             'name it with the board option "repo" (owner/name)'
                             % (self.project, 'items in %s' % ', '.join(repos) if repos else 'no items'))
        return repos[0]

    def reports(self) -> List[Dict[str, Any]]:
        """The announcer's report issues, read live through REST ``GET /repos/{owner}/{repo}/issues``
        (never the search API, whose index lags: D14): the open ones labelled ``fleet-report``, and the
        closed ones also labelled ``fleet-silenced`` (a human silenced that title). Pull requests,
        which this endpoint also lists, are left out."""
        repo = self._report_repo()
        out = []
        for state, labels in (('open', REPORT_LABEL), ('closed', '%s,%s' % (REPORT_LABEL, SILENCED_LABEL))):
            page = 1
            while True:
                data = self._rest('GET', '/repos/%s/issues' % repo,
                                  params={'state': state, 'labels': labels, 'per_page': 100, 'page': page},
                                  expect=list, what='list the reports of %s' % repo)
                for issue in data:
                    if not isinstance(issue, dict) or 'pull_request' in issue or not isinstance(issue.get('number'), int):
                        continue
                    names = [lb.get('name') for lb in issue.get('labels') or [] if isinstance(lb, dict)]
                    out.append({'number': issue['number'], 'repo': repo, 'title': issue.get('title') or '',
                                'state': issue.get('state'), 'silenced': issue.get('state') == 'closed' and SILENCED_LABEL in names,
                                'created_at': issue.get('created_at'), 'updated_at': issue.get('updated_at'),
                                'url': issue.get('html_url') or ''})
                if len(data) < 100:
                    break
                page += 1
        return out

    def create_report(self, title, body) -> Dict[str, Any]:
        """Open one report issue (label ``fleet-report``, never added to the project, so never a
        candidate), unless an open report with this exact title exists: the check reads the live list
        just before the write. Returns ``{'number', 'repo', 'created', 'url'}``. D14: the title and the
        body pass through ``defang``."""
        title = defang(title)
        for rep in self.reports():
            if rep['state'] == 'open' and rep['title'] == title:
                return {'number': rep['number'], 'repo': rep['repo'], 'created': False, 'url': rep['url']}
        repo = self._report_repo()
        data = self._rest('POST', '/repos/%s/issues' % repo, body={'title': title, 'body': defang(body), 'labels': [REPORT_LABEL]},
                          expect=dict, what='file a report in %s' % repo)
        if not isinstance(data.get('number'), int):
            raise BoardError('GitHub accepted a report in %s but answered without its number: %s' % (repo, error_text(201, data)))
        return {'number': data['number'], 'repo': repo, 'created': True, 'url': data.get('html_url') or ''}
