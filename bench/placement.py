"""Placement-model error and placement quality, on SYNTHETIC workloads.

Until the simulator's performance source is wired into
``contention.placement.datasets.SIMULATOR_HOOK`` these figures come from
the small closed-form generator in ``tests/unit/placement/synthetic.py``:
they show the training and cross-validation machinery works and what it
achieves on data with that structure, not accuracy on real hardware or
on the simulator. Every figure is labelled synthetic.

1. Interference model: per-workload leave-one-out MAE of the predicted
   normalised performance and co-runner slowdown.
2. Placement-vector model (paper section 5) on the paper's Intel shape
   (4 nodes x 12 cores x 2 threads, 24 vCPUs, 7 important placements):
   per-workload leave-one-out MAE and mean relative error, with the two
   input placements chosen automatically.
3. Placement quality: one arrival sequence on a small cluster placed by
   Nova-like spreading (most free CPUs), random choice and the
   contention scoring core; mean and minimum ground-truth performance.
"""

import random
import sys
import time

import numpy as np

TARGET_MAE = 0.04


def interference_error(topology, workloads, synthetic, datasets, models):
    data = datasets.interference_dataset(
        synthetic.performance, topology, workloads, samples_per_workload=40,
        label='synthetic')
    model = models.InterferenceModel()
    start = time.perf_counter()
    cv = model.cross_validate(data.X, data.Y, data.groups)
    return data, cv, time.perf_counter() - start


def placement_vector_error(synthetic, datasets, models, important, machine):
    topology = machine.regular_topology(nodes=4, cores_per_node=12,
                                        threads_per_core=2)
    placements = important.important_placements(topology, 24)
    workloads = synthetic.workloads(per_family=6, vcpus=24, seed=3)
    vectors, groups = datasets.placement_vector_dataset(
        synthetic.performance, topology, workloads, placements)
    model = models.PlacementVectorModel(n_estimators=25).fit(
        vectors, groups, datasets.placement_labels(placements))
    # relative error of the chosen pair, recomputed per held-out workload
    errors = []
    for name in sorted(set(groups)):
        test = np.asarray(groups) == name
        fold = models.PlacementVectorModel(
            n_estimators=25, inputs=model.inputs_).fit(
            vectors[~test], np.asarray(groups)[~test].tolist(),
            model.placements_)
        pred = fold.predict(vectors[test][:, list(model.inputs_)])
        errors.append(np.abs(pred - vectors[test]) / vectors[test])
    rel = float(np.mean(np.concatenate(errors)))
    return placements, model, rel


def placement_quality(model, synthetic, datasets, features, scoring,
                      machine, hosts=8, arrivals=48, seed=5):
    """Mean / min ground-truth performance of three placement policies."""
    topology = machine.regular_topology(nodes=2, cores_per_node=16)
    pool = synthetic.workloads(per_family=4, vcpus=4, seed=11)
    rng = random.Random(seed)
    sequence = [rng.choice(pool) for _ in range(arrivals)]
    results = {}
    for policy in ('nova-like spread', 'random', 'contention scoring'):
        prng = random.Random(seed)
        placed = []          # (host, node, workload)

        def cell_state(host, node):
            co = [w for h, n, w in placed if h == host and n == node]
            return features.CellState(
                cpus=16, co_mpki_sum=sum(w.profile.mpki for w in co),
                co_vcpus=sum(w.profile.vcpus for w in co))

        for workload in sequence:
            options = {}
            for host in range(hosts):
                cells = {n: cell_state(host, n) for n in (0, 1)}
                free = {n: c.free_cpus for n, c in cells.items()}
                node = max(free, key=lambda n: (free[n], -n))
                if free[node] >= workload.profile.vcpus:
                    options[host] = (node, cells[node])
            if not options:
                break
            if policy == 'random':
                host = prng.choice(sorted(options))
            elif policy == 'nova-like spread':
                host = max(options, key=lambda h: (
                    options[h][1].free_cpus
                    + cell_state(h, 1 - options[h][0]).free_cpus, -h))
            else:
                scores = scoring.score_hosts(
                    model, workload.profile,
                    {h: cell for h, (_, cell) in options.items()})
                host = max(scores, key=lambda h: (scores[h].score, -h))
            placed.append((host, options[host][0], workload))
        perfs = []
        for i, (host, node, workload) in enumerate(placed):
            co = tuple(datasets.CoRunner(w, frozenset([n]), w.profile.vcpus)
                       for j, (h, n, w) in enumerate(placed)
                       if h == host and n == node and j != i)
            perfs.append(synthetic.performance(datasets.Trial(
                topology, workload, frozenset([node]),
                cores=workload.profile.vcpus, corunners=co)).performance)
        results[policy] = (len(placed), float(np.mean(perfs)),
                           float(np.min(perfs)),
                           float(np.mean(np.asarray(perfs) >= 0.9)))
    return results


def main(argv=None):
    from contention.placement import datasets
    from contention.placement import features
    from contention.placement import important
    from contention.placement import machine
    from contention.placement import models
    from contention.placement import scoring
    from tests.unit.placement import synthetic

    topology = machine.regular_topology(nodes=2, cores_per_node=16)
    workloads = synthetic.workloads(per_family=6, vcpus=4, seed=1)
    data, cv, seconds = interference_error(topology, workloads, synthetic,
                                           datasets, models)
    print('### Placement model error (SYNTHETIC workloads)\n')
    print('Command: `python -m bench.run_all placement`. Data: the '
          'closed-form synthetic generator of '
          '`tests/unit/placement/synthetic.py` (not the simulator, not '
          'hardware): %d workloads in %d families.\n'
          % (len(workloads), len(synthetic.FAMILIES)))
    print('| model | samples | workloads (folds) | leave-one-workload-out '
          'MAE | target | met |')
    print('|---|---|---|---|---|---|')
    print('| interference (performance, co-runner slowdown) | %d | %d | '
          '%.4f (perf %.4f, slowdown %.4f) | <= %.2f | %s |' % (
              len(data.X), cv.folds, cv.mae, cv.per_output['performance'],
              cv.per_output['corunner_slowdown'], TARGET_MAE,
              'yes' if cv.mae <= TARGET_MAE else 'no'))
    placements, pv, rel = placement_vector_error(
        synthetic, datasets, models, important, machine)
    print('| placement vector (%d important placements, Intel shape, 24 '
          'vCPUs) | %d | %d | %.4f (mean relative error %.1f %%) | '
          '<= %.2f | %s |' % (
              len(placements), pv.cv_.folds, pv.cv_.folds, pv.cv_.mae,
              rel * 100, TARGET_MAE,
              'yes' if pv.cv_.mae <= TARGET_MAE else 'no'))
    print('\nPlacement-vector inputs chosen automatically: %s and %s '
          '(best of %d pairs). Interference cross-validation took %.1f s.'
          % (pv.placements_[pv.inputs_[0]], pv.placements_[pv.inputs_[1]],
             len(pv.pair_errors_), seconds))
    model = models.InterferenceModel().fit(data.X, data.Y, data.groups)
    quality = placement_quality(model, synthetic, datasets, features,
                                scoring, machine)
    print('\n### Placement quality (SYNTHETIC ground truth)\n')
    print('One sequence of 48 arrivals (4 vCPUs, hw:numa_nodes=1) on 8 '
          'hosts x 2 nodes x 16 CPUs (75 % full at the end); performance '
          'from the synthetic generator with the final co-runners.\n')
    print('| policy | placed | mean perf | min perf | share >= 0.9 |')
    print('|---|---|---|---|---|')
    for policy, (n, mean, low, share) in quality.items():
        print('| %s | %d | %.3f | %.3f | %.0f %% |'
              % (policy, n, mean, low, share * 100))
    print('\nNot yet measured: the same comparison on the simulator '
          '(`contention-sim evaluate --policy contention_weigher`), which '
          'needs the simulator\'s training source.')
    return 0


if __name__ == '__main__':
    sys.exit(main())
