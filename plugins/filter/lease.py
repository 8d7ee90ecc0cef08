# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What ``status`` says about a dispatcher's lease store. Thin over ``_store.lease.store_info``."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.fleet.dispatch.plugins.module_utils._store.lease import LeaseError, store_info


def lease_store(backend, path='', dsn=''):
    """``{backend, where, shared, deprecated, note}``; the DSN's password never appears in it."""
    try:
        return store_info(str(backend or 'sqlite'), path=str(path or ''), dsn=str(dsn or ''))
    except LeaseError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    def filters(self):
        return {'lease_store': lease_store}
