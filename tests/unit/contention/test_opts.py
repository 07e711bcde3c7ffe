"""[contention_thresholds] options -> threshold dataclasses."""

from oslo_config import cfg
from oslo_config import fixture as config_fixture
from oslotest import base

from contention import classify
from contention import opts
from contention import overhead


class TestOpts(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.conf = self.useFixture(config_fixture.Config(cfg.ConfigOpts()))
        opts.register_opts(self.conf.conf)

    def test_every_option_has_help(self):
        (group, options), = opts.list_opts()
        self.assertEqual('contention_thresholds', group)
        self.assertEqual(11, len(options))
        for opt in options:
            self.assertTrue(opt.help, opt.name)

    def test_defaults_are_the_dataclass_defaults(self):
        th, oth = opts.thresholds_from_conf(self.conf.conf)
        self.assertEqual(classify.Thresholds(), th)
        self.assertEqual(overhead.OverheadThresholds(), oth)

    def test_overrides(self):
        self.conf.config(group='contention_thresholds', mpki_high=20.0,
                         node_mpki_trigger=80.0,
                         mc_cycle_loss_levels=['0.2', '0.4'],
                         llc_hit_rate_levels=['0.6', '0.2'])
        th, oth = opts.thresholds_from_conf(self.conf.conf)
        self.assertEqual((20.0, 80.0), (th.mpki_high, th.node_mpki_trigger))
        self.assertEqual((0.2, 0.4), oth.mc_cycle_loss)
        self.assertEqual((0.6, 0.2), oth.llc_hit_rate)
        self.assertEqual('high/low', classify.merlin_class(21, 0.1, th))

    def test_inconsistent_values_name_the_group(self):
        self.conf.config(group='contention_thresholds', mpki_low=20.0)
        error = self.assertRaises(ValueError, opts.thresholds_from_conf,
                                  self.conf.conf)
        self.assertIn('[contention_thresholds]', str(error))
        self.assertIn('mpki_low', str(error))

    def test_unordered_levels_rejected(self):
        self.conf.config(group='contention_thresholds',
                         remote_ipc_ratio_levels=['1.5', '1.2'])
        error = self.assertRaises(ValueError, opts.thresholds_from_conf,
                                  self.conf.conf)
        self.assertIn('remote_ipc_ratio', str(error))

    def test_registers_on_a_fresh_conf(self):
        conf = cfg.ConfigOpts()
        conf([], project='test')
        th, _ = opts.thresholds_from_conf(conf)
        self.assertEqual(2.0, th.mpki_low)
