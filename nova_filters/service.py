"""What the weigher and the filter share in one scheduler process.

* the model, loaded once and reloaded when its file changes (a missing
  file, expected on a fresh cloud before ``contention-train`` has run,
  logs one warning, an unreadable or invalid one an error, once per file
  version, and either leaves the weigher neutral: the failure is
  remembered until the file changes, never retried per request);
* counts of hosts scored, abstained on and with unusable telemetry
  (:attr:`ContentionService.counts`);
* the telemetry store behind a :class:`~contention.store.CachedReader`
  (one read per TTL, whatever the number of hosts or requests);
* the instance profile of a request (hint > flavor > image > prior);
* the landing cell(s) of a request on a host (:class:`LandingPredictor`).

Everything Nova-specific is here and in the two plugin modules; the
scoring itself is :mod:`contention.perfmodel.scoring`.
"""

import collections
import os
import threading
import time

from oslo_log import log as logging
from oslo_utils import strutils

from contention.perfmodel import features
from contention.perfmodel import persist
from contention import store as store_api
from nova_filters import landing

LOG = logging.getLogger(__name__)

HINT = 'contention_profile'
PROFILE_SPEC = features.PROFILE_SPEC
SENSITIVE_SPEC = 'contention:sensitive'


class ContentionService:
    """Per-process state of the plugins; see the module doc."""

    def __init__(self, conf, clock=time.monotonic):
        self.conf = conf
        self.clock = clock
        self._lock = threading.Lock()
        self._model = None
        self._model_stamp = None
        self._failed_stamp = None
        self._reader = None
        self._store_error_logged = False
        self._image_cache = {}
        self._cells_cache = collections.OrderedDict()
        self.landing = landing.LandingPredictor(
            cache_size=conf.contention.landing_cache_size)
        #: Hosts scored, abstained on (model unsure), with unusable
        #: telemetry, failed model loads and model files found missing,
        #: since the process started.
        self.counts = collections.Counter()

    def count_scores(self, scores):
        """Count a request's HostScores into :attr:`counts`."""
        for score in scores:
            if score.abstained:
                self.counts['abstained'] += 1
            elif score.neutral_reason and score.neutral_reason.startswith(
                    'unusable telemetry'):
                self.counts['unusable_telemetry'] += 1
            elif not score.neutral:
                self.counts['scored'] += 1

    # -- model ----------------------------------------------------------

    def model(self):
        """The loaded ModelBundle, or None (logged once per file version).

        A missing file is a warning (a fresh cloud has no model yet); a
        file that cannot be read or loaded is an error.
        """
        path = self.conf.contention.model_path
        missing = False
        try:
            st = os.stat(path)
            stamp = (path, st.st_mtime_ns, st.st_size)
        except OSError as exc:
            missing = isinstance(exc, FileNotFoundError)
            stamp = (path, None, str(exc))
        with self._lock:
            if stamp == self._model_stamp:
                return self._model
            if stamp == self._failed_stamp:
                return None
            if missing:
                # Expected on a fresh cloud: no model trained yet. Not an
                # error, and said once until the file appears.
                LOG.warning('Contention weigher is neutral: model file %s '
                            'does not exist (no model trained yet?); '
                            'contention-train writes it, and the weigher '
                            'loads it when it appears', path)
                self._failed_stamp = stamp
                self._model = None
                self._model_stamp = None
                self.counts['model_missing'] += 1
                return None
            try:
                bundle = persist.load(path)
            except Exception as exc:
                # persist.load raises ModelFileError for any bad file; a
                # failure of any kind is remembered for this file version,
                # so the weigher stays neutral instead of reloading per
                # request.
                LOG.error('Contention weigher is neutral: %s', exc
                          if isinstance(exc, persist.ModelFileError) else
                          'model file %s cannot be loaded: %r' % (path, exc))
                self._failed_stamp = stamp
                self._model = None
                self._model_stamp = None
                self.counts['model_load_failures'] += 1
                return None
            LOG.info('Contention model %s loaded (trained on %s, '
                     'cross-validated MAE %s)', path,
                     bundle.summary.get('source'), bundle.cv_mae)
            self._model, self._model_stamp = bundle, stamp
            self._failed_stamp = None
            return bundle

    # -- store ----------------------------------------------------------

    def _get_reader(self):
        if self._reader is None:
            store = store_api.open_store(self.conf.contention.store_connection)
            # Scoring reads topologies and per-node aggregates only, so the
            # reader skips decoding every instance record of every host.
            self._reader = store_api.CachedReader(
                store, ttl_s=self.conf.contention.store_cache_ttl,
                with_instances=False)
        return self._reader

    def fresh_reports(self, hosts):
        """{host: fresh HostReport}; {} (logged once) if the store fails."""
        try:
            reports = self._get_reader().latest_reports(
                hosts=hosts, max_age_s=self.conf.contention.max_telemetry_age)
        except Exception as exc:   # a broken store must not fail a boot
            if not self._store_error_logged:
                LOG.error('Contention telemetry store unreadable, hosts get '
                          'neutral scores: %s', exc)
                self._store_error_logged = True
            return {}
        self._store_error_logged = False
        return reports

    def image_profile(self, image_id):
        if not image_id:
            return None
        now = self.clock()
        cached = self._image_cache.get(image_id)
        if cached and now - cached[0] < self.conf.contention.store_cache_ttl:
            return cached[1]
        try:
            profile = self._get_reader().store.image_profile(image_id)
        except Exception as exc:
            LOG.warning('Contention: cannot read the profile of image %s: '
                        '%s', image_id, exc)
            profile = None
        if len(self._image_cache) > 10000:
            self._image_cache.clear()
        self._image_cache[image_id] = (now, profile)
        return profile

    def cells(self, report):
        """The :class:`landing.Cells` of a report, cached per (host, time)."""
        key = (report.host, report.timestamp)
        cells = self._cells_cache.get(key)
        if cells is None:
            cells = landing.Cells(features.cells_from_report(report))
            self._cells_cache[key] = cells
            while len(self._cells_cache) > 20000:
                self._cells_cache.popitem(last=False)
        return cells

    # -- request --------------------------------------------------------

    def profile(self, spec_obj):
        """The InstanceProfile of a request; malformed inputs are logged."""
        flavor = spec_obj.flavor
        hints = spec_obj.scheduler_hints if (
            'scheduler_hints' in spec_obj and spec_obj.scheduler_hints) else {}
        hint = hints.get(HINT)
        if isinstance(hint, list):
            hint = hint[0] if hint else None
        extra = (flavor.extra_specs or {}).get(PROFILE_SPEC)
        image_id = None
        if 'image' in spec_obj and spec_obj.image and 'id' in spec_obj.image:
            image_id = spec_obj.image.id
        vcpus = max(1, int(flavor.vcpus))
        memory = int(flavor.memory_mb)
        profile, problems = features.choose_profile(
            hint=hint, extra_spec=extra, vcpus=vcpus, memory_mib=memory)
        for problem in problems:
            LOG.warning('Contention: %s', problem)
        if profile.source == 'prior' and image_id:
            # read the store only when hint and extra spec gave nothing
            profile, _ = features.choose_profile(
                image_profile=self.image_profile(image_id), vcpus=vcpus,
                memory_mib=memory)
        return profile


def is_move(spec_obj):
    """True for a rebuild or a move (requested destination with a cell)."""
    hints = spec_obj.scheduler_hints if (
        'scheduler_hints' in spec_obj and spec_obj.scheduler_hints) else {}
    if hints.get('_nova_check_type'):
        return True
    dest = (spec_obj.requested_destination
            if 'requested_destination' in spec_obj else None)
    return bool(dest is not None and 'cell' in dest and dest.cell)


def is_sensitive(spec_obj):
    value = (spec_obj.flavor.extra_specs or {}).get(SENSITIVE_SPEC)
    return strutils.bool_from_string(value, default=False)


_SERVICE = None
_SERVICE_LOCK = threading.Lock()


def get_service(conf):
    """The process-wide ContentionService (created on first use)."""
    global _SERVICE
    with _SERVICE_LOCK:
        if _SERVICE is None or _SERVICE.conf is not conf:
            _SERVICE = ContentionService(conf)
        return _SERVICE


def reset_service():
    """Forget the process-wide service (tests, config reload)."""
    global _SERVICE
    with _SERVICE_LOCK:
        _SERVICE = None
