# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Named provider errors, one per outcome, in each provider's own documented shape.

``preset(protocol, name, now)`` returns ``(status, body, headers)``. The names are the scenarios'
vocabulary, so one scenario file drives every CLI:

| name | anthropic | responses / chat (OpenAI) | gemini |
|---|---|---|---|
| ``throttle`` | 429 ``rate_limit_error``, ``retry-after``, ``anthropic-ratelimit-*`` | 429 ``rate_limit_exceeded``,
  "Please try again in 20s", ``retry-after`` | 429 ``RESOURCE_EXHAUSTED``, per-minute ``QuotaFailure``, ``RetryInfo`` 36s |
| ``bad_key`` | 401 ``authentication_error`` | 401 ``invalid_api_key`` | 400 ``INVALID_ARGUMENT`` with ``ErrorInfo`` ``API_KEY_INVALID`` |
| ``overloaded`` | 529 ``overloaded_error`` | 503 ``server_is_overloaded`` | 503 ``UNAVAILABLE`` |
| ``server_error`` | 500 ``api_error`` | 500 ``server_error`` | 500 ``INTERNAL`` |
| ``usage_limit`` | 429 with ``anthropic-ratelimit-unified-status: rejected`` and its reset | 429 ``usage_limit_reached``
  with ``resets_at`` | 429 per-day ``QuotaFailure`` with a per-minute ``RetryInfo`` hint |
| ``quota`` | 400 "credit balance is too low" | 429 ``insufficient_quota`` | 429 per-day quota with ``limit: 0`` |
| ``too_long`` | 400 "prompt is too long" | 400 ``context_length_exceeded`` | 400 "input token count ... exceeds the maximum" |

``now`` (epoch seconds) makes the stated resets reproducible; a usage limit resets 3 hours later.
"""
from __future__ import annotations

import datetime as _dt

from . import wire

NAMES = ('throttle', 'bad_key', 'overloaded', 'server_error', 'usage_limit', 'quota', 'too_long')
LIMIT_RESET_S = 3 * 3600
THROTTLE_RESET_S = 20


def _iso(epoch):
    return _dt.datetime.fromtimestamp(int(epoch), _dt.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


def _anthropic(name, now):
    def e(status, kind, msg):
        return wire.error_body('anthropic', status, kind, msg)
    if name == 'throttle':
        reset = _iso(now + THROTTLE_RESET_S)
        return 429, e(429, 'rate_limit_error', 'This request would exceed the rate limit for your organization '
                      '(00000000-0000-0000-0000-000000000000) of 50,000 input tokens per minute. For details, refer '
                      'to: https://docs.claude.com/en/api/rate-limits.'), {
            'retry-after': str(THROTTLE_RESET_S),
            'anthropic-ratelimit-requests-limit': '50', 'anthropic-ratelimit-requests-remaining': '49',
            'anthropic-ratelimit-requests-reset': reset,
            'anthropic-ratelimit-input-tokens-limit': '50000', 'anthropic-ratelimit-input-tokens-remaining': '0',
            'anthropic-ratelimit-input-tokens-reset': reset,
            'anthropic-ratelimit-tokens-limit': '58000', 'anthropic-ratelimit-tokens-remaining': '0',
            'anthropic-ratelimit-tokens-reset': reset}
    if name == 'bad_key':
        return 401, e(401, 'authentication_error', 'invalid x-api-key'), {}
    if name == 'overloaded':
        return 529, e(529, 'overloaded_error', 'Overloaded'), {}
    if name == 'server_error':
        return 500, e(500, 'api_error', 'Internal server error'), {}
    if name == 'usage_limit':
        reset = int(now) + LIMIT_RESET_S
        return 429, e(429, 'rate_limit_error', 'This request would exceed your account\'s rate limit. '
                      'Please try again later.'), {
            'anthropic-ratelimit-unified-status': 'rejected', 'anthropic-ratelimit-unified-reset': str(reset),
            'anthropic-ratelimit-unified-representative-claim': 'five_hour',
            'anthropic-ratelimit-unified-5h-status': 'rejected', 'anthropic-ratelimit-unified-5h-reset': str(reset),
            'anthropic-ratelimit-unified-5h-utilization': '1.0',
            'anthropic-ratelimit-unified-overage-status': 'rejected',
            'anthropic-ratelimit-unified-overage-disabled-reason': 'org_level_disabled',
            'retry-after': str(LIMIT_RESET_S)}
    if name == 'quota':
        return 400, e(400, 'invalid_request_error', 'Your credit balance is too low to access the Anthropic API. '
                      'Please go to Plans & Billing to upgrade or purchase credits.'), {}
    if name == 'too_long':
        return 400, e(400, 'invalid_request_error', 'prompt is too long: 213462 tokens > 200000 maximum'), {}
    raise KeyError(name)


def _openai(name, now, protocol):
    def e(status, code, msg, etype=None, extra=None):
        body = wire.error_body(protocol, status, code, msg, extra)
        if etype:
            body['error']['type'] = etype
        return body
    if name == 'throttle':
        return 429, e(429, 'rate_limit_exceeded', 'Rate limit reached for gpt-5 in organization org-fake on tokens '
                      'per min (TPM): Limit 30000, Used 29500, Requested 2400. Please try again in 20s. Visit '
                      'https://platform.openai.com/account/rate-limits to learn more.', 'tokens'), {
            'retry-after': str(THROTTLE_RESET_S), 'x-ratelimit-limit-tokens': '30000',
            'x-ratelimit-remaining-tokens': '0', 'x-ratelimit-reset-tokens': '%ds' % THROTTLE_RESET_S}
    if name == 'bad_key':
        return 401, e(401, 'invalid_api_key', 'Incorrect API key provided: sk-fake*****0000. You can find your API '
                      'key at https://platform.openai.com/account/api-keys.'), {}
    if name == 'overloaded':
        return 503, e(503, 'server_is_overloaded', 'Our servers are currently overloaded. Please try again later.',
                      'service_unavailable_error'), {}
    if name == 'server_error':
        return 500, e(500, None, 'The server had an error while processing your request. Sorry about that!'), {}
    if name == 'usage_limit':
        reset = int(now) + LIMIT_RESET_S
        body = {'error': {'type': 'usage_limit_reached', 'message': 'The usage limit has been reached',
                          'plan_type': 'plus', 'resets_at': reset, 'resets_in_seconds': LIMIT_RESET_S}}
        return 429, body, {}
    if name == 'quota':
        return 429, e(429, 'insufficient_quota', 'You exceeded your current quota, please check your plan and billing '
                      'details. For more information on this error, read the docs: '
                      'https://platform.openai.com/docs/guides/error-codes/api-errors.', 'insufficient_quota'), {}
    if name == 'too_long':
        return 400, e(400, 'context_length_exceeded', 'Your input exceeds the context window of this model. Please '
                      'adjust your input and try again.'), {}
    raise KeyError(name)


def _quota_details(quota_id, metric, limit, retry_s, model):
    return [{'@type': 'type.googleapis.com/google.rpc.QuotaFailure',
             'violations': [{'quotaMetric': 'generativelanguage.googleapis.com/%s' % metric, 'quotaId': quota_id,
                             'quotaDimensions': {'location': 'global', 'model': model}, 'quotaValue': str(limit)}]},
            {'@type': 'type.googleapis.com/google.rpc.Help',
             'links': [{'description': 'Learn more about Gemini API quotas',
                        'url': 'https://ai.google.dev/gemini-api/docs/rate-limits'}]},
            {'@type': 'type.googleapis.com/google.rpc.RetryInfo', 'retryDelay': '%ds' % retry_s}]


def _quota_message(metric, limit, model, retry_s):
    return ('You exceeded your current quota, please check your plan and billing details. For more information on '
            'this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. To monitor your current usage, '
            'head to: https://ai.dev/usage?tab=rate-limit. \n* Quota exceeded for metric: '
            'generativelanguage.googleapis.com/%s, limit: %d, model: %s\nPlease retry in %s.'
            % (metric, limit, model, '%.6fs' % (retry_s + 0.25)))


def _gemini(name, now, model):
    def e(status, kind, msg, details=None):
        return wire.error_body('gemini', status, kind, msg, details)
    if name in ('throttle', 'usage_limit', 'quota'):
        if name == 'throttle':
            qid, metric, limit = ('GenerateRequestsPerMinutePerProjectPerModel-FreeTier',
                                  'generate_content_free_tier_requests', 2)
        elif name == 'usage_limit':
            qid, metric, limit = ('GenerateRequestsPerDayPerProjectPerModel-FreeTier',
                                  'generate_content_free_tier_requests', 50)
        else:
            qid, metric, limit = ('GenerateRequestsPerDayPerProjectPerModel-FreeTier',
                                  'generate_content_free_tier_requests', 0)
        retry_s = 36
        return 429, e(429, 'RESOURCE_EXHAUSTED', _quota_message(metric, limit, model, retry_s),
                      _quota_details(qid, metric, limit, retry_s, model)), {}
    if name == 'bad_key':
        return 400, e(400, 'INVALID_ARGUMENT', 'API key not valid. Please pass a valid API key.', [
            {'@type': 'type.googleapis.com/google.rpc.ErrorInfo', 'reason': 'API_KEY_INVALID',
             'domain': 'googleapis.com', 'metadata': {'service': 'generativelanguage.googleapis.com'}},
            {'@type': 'type.googleapis.com/google.rpc.LocalizedMessage', 'locale': 'en-US',
             'message': 'API key not valid. Please pass a valid API key.'}]), {}
    if name == 'overloaded':
        return 503, e(503, 'UNAVAILABLE', 'The model is overloaded. Please try again later.'), {}
    if name == 'server_error':
        return 500, e(500, 'INTERNAL', 'An internal error has occurred. Please retry or report in '
                      'https://developers.generativeai.google/guide/troubleshooting'), {}
    if name == 'too_long':
        return 400, e(400, 'INVALID_ARGUMENT', 'The input token count (1201337) exceeds the maximum number of tokens '
                      'allowed (1048576).'), {}
    raise KeyError(name)


def preset(protocol, name, now, model='gemini-2.5-pro'):
    """``(status, body, headers)`` of the named error in ``protocol``'s shape."""
    if name not in NAMES:
        raise KeyError('unknown error preset %r (known: %s)' % (name, ', '.join(NAMES)))
    if protocol == 'anthropic':
        return _anthropic(name, now)
    if protocol == 'gemini':
        return _gemini(name, now, model)
    return _openai(name, now, protocol)
