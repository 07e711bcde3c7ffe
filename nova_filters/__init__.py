"""Nova scheduler plugins: ``nova_filters.ContentionWeigher`` and
``nova_filters.ContentionFilter``.

Enable them in nova.conf::

    [filter_scheduler]
    weight_classes = nova.scheduler.weights.all_weighers,nova_filters.ContentionWeigher
    available_filters = nova.scheduler.filters.all_filters
    available_filters = nova_filters.ContentionFilter
    enabled_filters = ...,ContentionFilter

(``enabled_filters`` takes bare class names: a module path there makes
nova-scheduler refuse to start.)

The classes are loaded lazily, so importing this package does not import
Nova until a class is asked for. See ``doc/nova.md``.
"""

_EXPORTS = {
    'ContentionWeigher': 'nova_filters.weigher',
    'ContentionFilter': 'nova_filters.filter',
}


def __getattr__(name):
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError('module %r has no attribute %r'
                             % (__name__, name))
    import importlib
    return getattr(importlib.import_module(module_name), name)


def __dir__():
    return sorted(list(globals()) + list(_EXPORTS))
