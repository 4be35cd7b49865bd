"""The scripted code-mode team of the tests as a standing OpenAI-compatible server, for trying
code mode without a model (the README's acceptance story):

    python -m tests.fakes.serve_code_team      # prints its base URL, serves until Ctrl-C
"""

from __future__ import annotations

import time

from tests.fakes.code_team import BROKEN, CHARGES_PER_MONTH, PLAIN, CodeTeam
from tests.fakes.openai_server import ScriptedOpenAI


def main() -> None:
    team = CodeTeam(["plain logistic", "charges per month", "forgetful coder"],
                    {"plain logistic": PLAIN, "charges per month": CHARGES_PER_MONTH,
                     "forgetful coder": BROKEN})
    server = ScriptedOpenAI(responder=team)
    print(server.base_url, flush=True)
    try:
        while True:
            time.sleep(60)
    except KeyboardInterrupt:
        server.close()


if __name__ == "__main__":
    main()
