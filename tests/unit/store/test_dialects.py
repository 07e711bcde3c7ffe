"""The CSV fields the PostgreSQL COPY path writes."""

from oslotest import base

from contention.store import dialects


class TestCsv(base.BaseTestCase):

    def test_null_text_and_numbers(self):
        self.assertEqual(['', '""', '"a,""b"""', '1.5', '7', 'true'],
                         [dialects._csv(v) for v in (
                             None, '', 'a,"b"', 1.5, 7, True)])

    def test_floats_round_trip(self):
        value = 0.1 + 0.2
        self.assertEqual(value, float(dialects._csv(value)))
