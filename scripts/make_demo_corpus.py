#!/usr/bin/env python3
"""Generate the ingestaudit demo corpus (``fixtures/demo``) from text written for this project.

Usage::

    python scripts/make_demo_corpus.py            # rewrites fixtures/demo/{docs,truth,questions.jsonl,MANIFEST.json}
    python scripts/make_demo_corpus.py --out DIR  # writes the same files under DIR

Every byte is a function of this script and the versions of PyMuPDF, Pillow and zlib it runs with: PDFs get fixed
metadata and no file ID, images are degraded with noise drawn from SHAKE-256 of a fixed seed (no random module, no
numpy RNG), PNGs carry no timestamp. ``MANIFEST.json`` records those versions and the SHA-256 of every file, so
``tests/test_demo_corpus.py`` can demand byte identity when the versions match and content identity otherwise.

The corpus has three classes (see ``fixtures/demo/README.md`` for what each document exercises):

- ``born_digital/``: two-column PDFs with running headers and footers, ligature characters (U+FB00-U+FB04) in the
  text layer, soft hyphens (U+00AD) at line breaks, a table, text placed outside the page box, and one page whose
  right column comes first in the content stream.
- ``scanned/``: pages rendered to PNG at 150 or 200 DPI, some rotated, blurred and speckled; one image-only PDF.
- ``web/``: HTML pages with navigation, a cookie banner, a footer, hidden elements, a script, comments; one German.

Truth conventions (the reference is what a person reading the page sees, in reading order): one line per block
(paragraph, heading, list item, table cell, header or footer item), ligatures written out, soft hyphens removed,
other characters (typographic quotes, dashes, no-break spaces) kept as they appear.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import json
import re
import shutil
import sys
import zlib
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path

import numpy as np
import pymupdf
from PIL import Image, ImageFilter
from PIL import __version__ as PILLOW_VERSION

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "fixtures" / "demo"

SHY = "\u00ad"
# Longest first, so "ffi" becomes one ligature and not "ff" + "i".
LIGATURES = (("ffi", "\ufb03"), ("ffl", "\ufb04"), ("ff", "\ufb00"), ("fi", "\ufb01"), ("fl", "\ufb02"))
PDF_DATE = "D:20240301120000Z"
PRODUCER = "ingestaudit demo corpus generator (scripts/make_demo_corpus.py)"
A4 = (595.0, 842.0)
A5 = (420.0, 595.0)
FONTS = {"body": "tiro", "bold": "hebo", "italic": "tiit", "small": "helv", "cellbold": "tibo"}


# ---------------------------------------------------------------------------------------------------------------------
# Document specifications (all prose written for this project; names, places and numbers are fictional)
# ---------------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Block:
    """One block of body text. ``kind``: "h2" (section heading), "p" (paragraph) or "colbreak" (start the next
    column). ``text`` is the truth text except that U+00AD marks where a line may be broken with a hyphen."""

    kind: str
    text: str = ""


def H(text: str) -> Block:
    return Block("h2", text)


def P(text: str) -> Block:
    return Block("p", text)


COLBREAK = Block("colbreak")


@dataclass(frozen=True)
class Table:
    """A ruled table drawn full width below the columns; the first row is the header row."""

    caption: str
    rows: tuple[tuple[str, ...], ...]
    widths: tuple[float, ...]  # fractions of the text width


@dataclass(frozen=True)
class PageDoc:
    """A generated paged document (PDF or a page image)."""

    name: str
    header: tuple[str, str]
    footer: str  # left part; the right part is "Page n of m" when page_numbers
    title: str
    byline: str
    body: tuple[Block, ...]
    columns: int = 2
    size: tuple[float, float] = A4
    ligatures: bool = True
    right_first: bool = False
    page_numbers: bool = True
    table: Table | None = None
    offpage: str | None = None
    body_size: float = 10.5
    leading: float = 13.6
    margin: float = 58.0
    # checks: ("present"|"absent", text) or ("order", before, after); "order!" also asserts the layout puts
    # `before` low in the left column and `after` high in the right one, so line interleaving breaks the order.
    checks: tuple[tuple[str, ...], ...] = ()
    boilerplate_with: tuple[str, ...] = ()
    language: str = "en"
    dup_group: str | None = None


PUMP = PageDoc(
    name="pump_field_note",
    header=("Halvorsen Instruments · Field Note FN-07", "Revision B · March 2024"),
    footer="Halvorsen Instruments internal documentation",
    title="Commissioning the HX-40 Peristaltic Pump",
    byline="Field service notes for site engineers, second revision.",
    offpage="Proof slug: job 4471, plate B, do not print",
    body=(
        H("Before you start"),
        P("The HX-40 is shipped with its rotor locked and its tubing cartridge packed separately. Check the "
          "cartridge label against the order sheet: the standard configuration uses a 6.4 mm silicone tube, while "
          "the chemical-resistant configuration uses a fluoro\u00adelastomer tube with a blue stripe. Fitting the "
          "wrong tube is the most frequent cause of early failures reported from the field."),
        P("Allow the pump to reach room temperature before installation. Condensation inside the drive housing will "
          "not damage the motor, but it confuses the optical flow sensor for the first hour of operation and "
          "produces spurious alarms."),
        H("Mounting"),
        P("Mount the pump on a rigid, level surface. Vibration from nearby compressors shortens tube life "
          "noticeably, so keep at least half a metre of clearance or fit the optional rubber feet. The inlet side "
          "must sit lower than the reservoir outlet; the pump is self-priming, but a flooded inlet removes the need "
          "for the priming cycle altogether."),
        P("Route the outlet line without sharp bends. Every kink adds back pressure, and the controller interprets "
          "sustained back pressure as a blocked line. If the installation requires a tight turn, use a moulded "
          "elbow rather than bending the tube by hand."),
        H("Electrical connection"),
        P("Connect the supply only after the tubing is in place. The HX-40 accepts 100 to 240 volts and draws less "
          "than forty watts at full speed. The control terminal block on the rear panel takes a 4 to 20 mA speed "
          "signal and provides two relay outputs: one for the run state and one for the fault state. Shielded "
          "cable is recommended for the analogue signal whenever the run exceeds ten metres."),
        H("First run"),
        P("Release the rotor lock, close the cartridge lever and select manual mode. Run the pump at ten percent "
          "speed for two minutes with water before introducing the process fluid. Listen for a steady, even "
          "rhythm; an irregular clicking usually means the cartridge is not fully seated."),
        P("Next, run the cali\u00adbration routine. The controller pumps a fixed number of revolutions into a "
          "measuring cylinder, and you enter the collected volume. The resulting calibration factor is stored with "
          "the tube type, so changing to a different tube later requires a new calibration. A factor outside the "
          "range of 0.92 to 1.08 points to a worn or incorrectly fitted tube."),
        H("Flow stability"),
        P("Peristaltic pumps deliver flow in pulses, one for each roller pass. For dosing applications this is "
          "rarely a concern, but sensitive downstream instruments may need a pulse dampener. The HX-40 offers a "
          "smoothing mode that varies the rotor speed within each revolution; it reduces pulsation by roughly half "
          "at the cost of a slightly higher tube wear rate."),
        P("Efficiency drops as the tube ages. The controller tracks the cumulative number of revolutions and raises "
          "a maintenance reminder at eighty percent of the rated tube life. Ignoring the reminder is not dangerous, "
          "but the delivered volume will drift below the calibrated value."),
        H("Maintenance"),
        P("Replace the tube cartridge at every reminder or whenever visible flattening appears. Clean the rollers "
          "with a dry cloth; solvents attack the roller coating. Keep a spare cartridge on site, because a "
          "replacement takes less than five minutes and avoids a long stop of the line."),
        P("Record each replacement in the service log together with the new calibration factor. A sequence of "
          "factors that falls steadily over several months is an early sign of roller wear, which the field team "
          "can confirm during the annual inspection."),
        H("Alarms and troubleshooting"),
        P("A flashing amber light indicates a warning that does not stop the pump, such as an approaching tube "
          "change. A steady red light indicates a fault: the rotor stops, the fault relay opens and the display "
          "shows a code. The most common codes are listed on the inside of the front cover."),
        P("Code E2 means the rotor could not complete a revolution within the expected time. Open the cartridge, "
          "check for a trapped or twisted tube and close the lever firmly before restarting. Code E5 means the "
          "outlet pressure exceeded the configured limit; look for a closed valve or a blocked filter downstream "
          "before raising the limit."),
        P("If the pump runs but delivers no liquid, the tube is probably not gripped by the rollers. Check that "
          "the cartridge matches the configured tube size, and repeat the calibration after any change."),
        COLBREAK,
        H("Storage"),
        P("For storage longer than a month, release the cartridge lever so that the tube is not compressed by the "
          "rollers. A tube left clamped for several weeks takes on a permanent set and will deliver less than its "
          "rated volume when the pump is restarted."),
        P("Store the pump dry and upright, between 5 and 40 degrees. Drain the tube before storage if the process "
          "fluid could crystallise or set."),
    ),
    checks=(
        ("present", "The HX-40 is shipped with its rotor locked"),
        ("present", "Store the pump dry and upright"),
        ("present", "the first hour of operation"),
        ("absent", "Proof slug: job 4471"),
        ("order", "Commissioning the HX-40 Peristaltic Pump", "Store the pump dry and upright"),
        ("order!", "speed for two minutes with water", "Next, run the calibration routine"),
    ),
    boilerplate_with=(
        "Commissioning the HX-40 Peristaltic Pump",
        "Mount the pump on a rigid, level surface.",
        "Peristaltic pumps deliver flow in pulses, one for each roller pass.",
    ),
)

BYLAW_TABLE = Table(
    caption="Table 1. Quiet hours by zone",
    rows=(
        ("Zone", "Monday to Friday", "Saturday", "Sunday and holidays"),
        ("Residential", "21:00 to 07:00", "20:00 to 09:00", "All day"),
        ("Mixed use", "22:00 to 07:00", "21:00 to 08:00", "20:00 to 10:00"),
        ("Industrial", "None", "None", "22:00 to 07:00"),
    ),
    widths=(0.22, 0.26, 0.24, 0.28),
)

BYLAW = PageDoc(
    name="bylaw_quiet_hours",
    header=("Municipality of Larkspur Bay · Bylaw 2023-14", "Consolidated version"),
    footer="Published by the Office of the Town Clerk",
    title="Bylaw 2023-14: Quiet Hours and Construction Noise",
    byline="Adopted by council on 12 September 2023.",
    table=BYLAW_TABLE,
    body=(
        H("1. Purpose"),
        P("This bylaw sets the hours during which noise from construction, landscaping equipment and amplified "
          "sound is restricted in Larkspur Bay, so that residents can rest and businesses can plan their work with "
          "certainty."),
        H("2. Definitions"),
        P("In this bylaw, \u201cquiet hours\u201d means the periods listed in Table 1 for each zone. "
          "\u201cConstruction noise\u201d means sound from the operation of powered tools, excavators, pile "
          "drivers, concrete mixers and similar equipment on a building site. A \u201cpermit holder\u201d is a "
          "person to whom the Town Clerk has issued a written exemption under section 5."),
        H("3. Restrictions"),
        P("During quiet hours no person shall operate construction equipment or powered landscaping tools "
          "outdoors, or play amplified music that is audible at the boundary of a neighbouring property. "
          "Emergency repairs to water, gas and electrical services are exempt from this section."),
        COLBREAK,
        H("4. Enforcement"),
        P("A bylaw officer who receives a complaint may attend the site, measure the sound level and issue a "
          "written warning. A second offence within twelve months carries a fine of 250 dollars; each further "
          "offence carries a fine of 500 dollars."),
        H("5. Exemptions"),
        P("The Town Clerk may grant a written exemption for work that cannot reasonably be performed outside quiet "
          "hours, such as a concrete pour that must continue without interruption. The application must be filed "
          "at least ten working days in advance and must name the affected streets."),
        H("6. Coming into force"),
        P("This bylaw comes into force on the first day of the month following its adoption by council."),
    ),
    checks=(
        ("present", "Emergency repairs to water, gas and electrical services are exempt"),
        ("present", "Sunday and holidays"),
        ("order", "1. Purpose", "6. Coming into force"),
        ("order!", "exempt from this section", "4. Enforcement"),
        ("order", "Table 1. Quiet hours by zone", "Page 1 of 1"),
    ),
    boilerplate_with=(
        "Bylaw 2023-14: Quiet Hours and Construction Noise",
        "During quiet hours no person shall operate construction equipment",
    ),
    dup_group="larkspur-bylaw-2023-14",
)

LAB = PageDoc(
    name="lab_notes_right_first",
    header=("Greywater Reuse Pilot · Lab Notebook 3", "Bench B"),
    footer="Northgate Community College · Environmental Science",
    title="Week 6: Settling Trials with the Sand Filter",
    byline="Entries by the Tuesday lab group.",
    right_first=True,
    body=(
        H("Aim"),
        P("We want to know whether a short settling stage before the sand filter reduces how often the filter has "
          "to be backwashed. Last week the filter clogged after only four days of greywater from the student "
          "kitchen, which is far too short for a household system."),
        H("Set-up"),
        P("Two identical columns of washed river sand, each 40 cm deep, were fed from the same collection tank. "
          "Column A received the water directly. Column B received water that had first stood for three hours in "
          "a 20 litre settling bucket. Both columns were fed 12 litres per day in four equal doses."),
        P("Turbidity was measured at the outlet of each column every morning with the bench turbidimeter, after a "
          "two-minute flush to clear standing water from the outlet tube."),
        COLBREAK,
        H("Observations"),
        P("Column B produced clearer water from the second day onward. Its outlet turbidity stayed between 3 and "
          "5 NTU, while column A rose from 6 to 19 NTU over the week. A grey film formed on the surface of column "
          "A by day four; column B showed only a thin layer of fine sediment."),
        P("The settling bucket collected a surprising amount of material: about 180 ml of sludge over six days, "
          "most of it lint and food particles. Emptying it is unpleasant, and a household user would need a "
          "simpler way to do so."),
        H("Next steps"),
        P("Repeat the trial with a settling time of one hour to see whether the benefit holds. Weigh the dried "
          "sludge rather than estimating its volume. Ask the workshop whether the bucket can be fitted with a "
          "drain valve at the bottom."),
    ),
    checks=(
        ("present", "Two identical columns of washed river sand"),
        ("order", "We want to know whether a short settling stage", "Repeat the trial with a settling time"),
        ("order!", "clear standing water from the", "Column B produced clearer water"),
    ),
    boilerplate_with=("Week 6: Settling Trials with the Sand Filter",),
)

NOTICE = PageDoc(
    name="notice_water_main",
    header=("Larkspur Bay Water Utility", "14 Harbour Road, Larkspur Bay"),
    footer="Customer notice 2024/07",
    page_numbers=False,
    title="Planned water main replacement on Heron Street",
    byline="Notice to residents, issued 2 April 2024",
    columns=1,
    size=A5,
    ligatures=False,
    body_size=10.0,
    leading=13.5,
    margin=44.0,
    body=(
        P("Between 15 April and 10 May we will replace the cast iron water main under Heron Street between Mill "
          "Lane and the harbour roundabout. The existing pipe is more than ninety years old and has burst three "
          "times since last winter."),
        P("Work will take place on weekdays from 7:30 to 17:00. One lane of Heron Street will remain open at all "
          "times, controlled by temporary traffic lights. Parking on the north side of the street will be "
          "suspended while the crew works on each section."),
        P("Your water supply will be interrupted for up to four hours when your property is connected to the new "
          "main. We will deliver a card to your door at least two days before the interruption. Please keep a few "
          "litres of drinking water in reserve on that day."),
        P("If you have questions, call our project line on 555-0198 or write to "
          "heron.street@water.larkspurbay.example."),
        P("We apologise for the disruption and thank you for your patience."),
    ),
    checks=(
        ("present", "replace the cast iron water main under Heron Street"),
        ("present", "555-0198"),
        ("order", "Planned water main replacement on Heron Street", "thank you for your patience"),
    ),
)

RECIPE = PageDoc(
    name="recipe_card_degraded",
    header=("Willow Lane Community Cookbook", "Card 12"),
    footer="Baking",
    page_numbers=False,
    title="Oat and Apple Loaf",
    byline="A dense, lightly sweet loaf that keeps for three days.",
    columns=1,
    size=A5,
    ligatures=False,
    body_size=11.0,
    leading=15.0,
    margin=44.0,
    body=(
        H("Ingredients"),
        P("250 g rolled oats"),
        P("2 ripe apples, grated"),
        P("300 ml milk"),
        P("2 eggs"),
        P("1 teaspoon baking powder"),
        P("A pinch of cinnamon"),
        H("Method"),
        P("1. Soak the oats in the milk for twenty minutes."),
        P("2. Heat the oven to 180 \u00b0C and line a loaf tin with baking paper."),
        P("3. Stir the eggs, apples, baking powder and cinnamon into the soaked oats."),
        P("4. Pour the mixture into the tin and bake for 45 minutes, until the top is firm and golden."),
        P("5. Leave to cool in the tin for ten minutes before slicing."),
    ),
    checks=(
        ("present", "250 g rolled oats"),
        ("present", "Soak the oats in the milk for twenty minutes"),
        ("order", "Ingredients", "Method"),
    ),
)

MINUTES = PageDoc(
    name="allotment_minutes",
    header=("Willow Lane Allotment Association", "Committee minutes"),
    footer="Approved copy for the noticeboard",
    page_numbers=False,
    title="Committee meeting of 4 May 2024",
    byline="Held in the association hut at 7.30 pm.",
    columns=1,
    size=A5,
    ligatures=False,
    body_size=10.0,
    leading=13.5,
    margin=44.0,
    body=(
        P("Present: the chair, the treasurer, the secretary and six plot holders. Apologies were received from "
          "two members."),
        H("1. Water supply"),
        P("The treasurer reported that the new rainwater tanks on the east side are full and working. The "
          "committee agreed to ask plot holders to use the tanks before the mains tap during dry weeks."),
        H("2. Shared tools"),
        P("The shed lock was replaced after the spring break-in. New keys are available from the secretary "
          "against a deposit of ten pounds."),
        H("3. Open day"),
        P("The open day will be held on Saturday 22 June. Volunteers are needed for the plant stall and the tea "
          "table; a sign-up sheet is pinned to the noticeboard."),
        P("The meeting closed at 8.45 pm. The next meeting will be held on 6 July."),
    ),
    checks=(
        ("present", "the new rainwater tanks on the east side"),
        ("order", "1. Water supply", "3. Open day"),
    ),
)


@dataclass(frozen=True)
class Scan:
    """A page of a PageDoc rendered to a grey image and degraded; ``pdf`` embeds it in an image-only PDF."""

    source: PageDoc
    name: str
    dpi: int
    angle: float = 0.0  # degrees, counter-clockwise
    blur: float = 0.0  # Gaussian blur radius in pixels
    specks: int = 0  # dark specks and white drop-outs, each at specks/65536 of the pixels
    ink: int = 0  # grey level of full ink (0 = black)
    paper: int = 255  # grey level of blank paper
    pdf: bool = False
    seed: str = ""


SCANS = (
    Scan(BYLAW, "bylaw_quiet_hours_scan", dpi=150, angle=0.7, blur=0.6, specks=60, ink=28, paper=236,
         seed="bylaw-scan"),
    Scan(NOTICE, "notice_water_main", dpi=200, seed="notice"),
    Scan(RECIPE, "recipe_card_degraded", dpi=150, angle=-1.8, blur=1.1, specks=200, ink=70, paper=214,
         seed="recipe"),
    Scan(MINUTES, "allotment_minutes", dpi=150, angle=-0.5, blur=0.5, specks=40, ink=20, paper=240, pdf=True,
         seed="minutes"),
)


@dataclass(frozen=True)
class WebPage:
    """An HTML page. Main-content items are (tag, inner HTML) with tag in h1, h2, p, ul (inner = list of items)
    or table (inner = rows, first row the header)."""

    name: str
    lang: str
    title: str
    site: str
    nav: tuple[str, ...]
    main: tuple[tuple[str, object], ...]
    footer: tuple[str, ...]
    cookie: str
    buttons: tuple[str, str]
    script: str
    comment: str
    hidden: str
    checks: tuple[tuple[str, ...], ...] = ()


TRAIL = WebPage(
    name="trail_guide",
    lang="en",
    title="Cliff Path Loop \u2013 Larkspur Bay Parks and Trails",
    site="Larkspur Bay Parks and Trails",
    nav=("Home", "Trails", "Camping", "Events", "Contact"),
    main=(
        ("h1", "Cliff Path Loop"),
        ("p", "A 7.5 km circuit along the northern headland, with two lookouts and a sheltered picnic meadow."),
        ("h2", "Route"),
        ("p", "The loop starts at the <strong>North Gate car park</strong> and follows the cliff edge westward for "
              "the first three kilometres. The path is gravel and well drained, but the section below the second "
              "lookout is steep and can be slippery after rain."),
        ("p", "After the old signal station the trail turns inland through a belt of wind-bent pines and returns "
              "to the car park along the meadow track. Most walkers finish the loop in two and a half hours."),
        ("h2", "Good to know"),
        ("ul", ("Dogs are welcome on a lead between March and September.",
                "There is no drinking water on the route; bring at least a litre per person.",
                "The picnic meadow has tables and a composting toilet.",
                "Mobile reception is patchy beyond the signal station.")),
        ("h2", "Seasonal closures"),
        ("p", "The lower cliff steps close from 1&nbsp;November to 28&nbsp;February each year while the seabird "
              "colony is nesting. During that period a signed detour adds about 800 metres to the walk."),
    ),
    footer=("\u00a9 2024 Larkspur Bay Parks and Trails", "Accessibility statement", "Privacy notice",
            "Ranger office: 555-0142"),
    cookie="We use cookies to remember your map settings and to count visits. You can accept or reject optional "
           "cookies.",
    buttons=("Accept all", "Reject optional"),
    script="window.parkAnalytics = {page: 'cliff-path-loop', consent: false};",
    comment="editor note: confirm the detour length with the rangers",
    hidden="Draft: add photos of the signal station before the summer update.",
    checks=(
        ("present", "follows the cliff edge westward for the first three kilometres"),
        ("present", "Mobile reception is patchy beyond the signal station."),
        ("absent", "parkAnalytics"),
        ("absent", "confirm the detour length with the rangers"),
        ("absent", "add photos of the signal station"),
        ("order", "Cliff Path Loop", "Seasonal closures"),
        ("order", "Good to know", "The lower cliff steps close"),
    ),
)

KETTLE = WebPage(
    name="kettle_faq",
    lang="en",
    title="Brightwell K2 Kettle \u2013 Frequently asked questions",
    site="Brightwell Home Appliances",
    nav=("Products", "Support", "Spare parts", "Where to buy"),
    main=(
        ("h1", "Brightwell K2 kettle: frequently asked questions"),
        ("p", "Answers to the questions our support team hears most often about the K2 variable-temperature "
              "kettle."),
        ("h2", "Why does the kettle switch off before the water boils?"),
        ("p", "The K2 stops heating when the water reaches the temperature selected on the dial, which may be well "
              "below boiling. Turn the dial fully clockwise to the 100&nbsp;\u00b0C position for a full boil. If "
              "the kettle still switches off early, descale it: a layer of scale on the base plate makes the "
              "sensor read high."),
        ("h2", "How do I descale it?"),
        ("p", "Fill the kettle to the 1.0 litre mark with equal parts water and white vinegar, bring it to the boil "
              "and leave it to stand for an hour. Empty it, rinse twice and boil a full kettle of clean water "
              "before use. In hard-water areas we recommend descaling every four weeks."),
        ("h2", "Can I replace the filter?"),
        ("p", "Yes. The mesh filter behind the spout lifts out upwards and is sold as spare part <em>KF-2</em>. "
              "It can be rinsed under the tap and is dishwasher safe."),
        ("h2", "Technical specifications"),
        ("table", (("Property", "Value"),
                   ("Capacity", "1.7 litres"),
                   ("Power", "2200 W"),
                   ("Temperature settings", "70, 80, 90 and 100 \u00b0C"),
                   ("Keep-warm time", "30 minutes"),
                   ("Cord length", "0.75 m"))),
    ),
    footer=("Brightwell Home Appliances Ltd, 12 Foundry Lane, Larkspur Bay", "Terms of sale", "Warranty",
            "\u00a9 2024 Brightwell"),
    cookie="This site uses cookies to keep your basket and to measure how our pages are used.",
    buttons=("Accept", "Settings"),
    script="var supportWidget = {queue: 'kettles', locale: 'en-GB'};",
    comment="TODO: link the descaling video once it is approved",
    hidden="Internal: escalate repeated early switch-off reports to quality control.",
    checks=(
        ("present", "a layer of scale on the base plate makes the sensor read high"),
        ("present", "Temperature settings"),
        ("absent", "supportWidget"),
        ("absent", "link the descaling video"),
        ("absent", "escalate repeated early switch-off reports"),
        ("order", "How do I descale it?", "Can I replace the filter?"),
    ),
)

LIBRARY = WebPage(
    name="stadtbibliothek_oeffnungszeiten",
    lang="de",
    title="Neue \u00d6ffnungszeiten \u2013 Stadtbibliothek Wiesenfeld",
    site="Stadtbibliothek Wiesenfeld",
    nav=("Startseite", "Katalog", "Veranstaltungen", "\u00d6ffnungszeiten", "Kontakt"),
    main=(
        ("h1", "Neue \u00d6ffnungszeiten ab dem 1. April"),
        ("p", "Die Stadtbibliothek Wiesenfeld \u00f6ffnet ab dem 1. April an vier Tagen in der Woche bis zum "
              "Abend. Damit reagieren wir auf die Umfrage aus dem vergangenen Herbst, in der sich viele "
              "Berufst\u00e4tige l\u00e4ngere \u00d6ffnungszeiten gew\u00fcnscht haben."),
        ("h2", "Die Zeiten im \u00dcberblick"),
        ("ul", ("Dienstag bis Freitag: 10 bis 20 Uhr",
                "Samstag: 10 bis 16 Uhr",
                "Sonntag und Montag: geschlossen")),
        ("h2", "R\u00fcckgabe rund um die Uhr"),
        ("p", "Medien k\u00f6nnen Sie jederzeit am neuen R\u00fcckgabe&shy;automaten im Eingangsbereich abgeben. "
              "Der Automat druckt auf Wunsch eine Quittung aus und bucht die R\u00fcckgabe sofort auf Ihr "
              "Leserkonto."),
        ("h2", "Fragen?"),
        ("p", "Unser Team an der Information hilft Ihnen gern weiter. Gr\u00f6\u00dfere Gruppen melden sich bitte "
              "vorher an, damit wir gen\u00fcgend Arbeitspl\u00e4tze reservieren k\u00f6nnen."),
    ),
    footer=("Stadtbibliothek Wiesenfeld, Marktplatz 3, 34567 Wiesenfeld", "Impressum", "Datenschutz",
            "Barrierefreiheit"),
    cookie="Wir verwenden nur technisch notwendige Cookies und eine datensparsame Besucherstatistik.",
    buttons=("Einverstanden", "Nur notwendige"),
    script="var bibliothekStatistik = {seite: 'oeffnungszeiten'};",
    comment="Bild vom Automaten folgt",
    hidden="Entwurf: Text mit der Pressestelle abstimmen.",
    checks=(
        ("present", "am neuen R\u00fcckgabeautomaten im Eingangsbereich abgeben"),
        ("present", "Sonntag und Montag: geschlossen"),
        ("absent", "bibliothekStatistik"),
        ("absent", "Text mit der Pressestelle abstimmen"),
        ("order", "Die Zeiten im \u00dcberblick", "R\u00fcckgabe rund um die Uhr"),
    ),
)

BORN_DIGITAL = (PUMP, BYLAW, LAB)
WEB = (TRAIL, KETTLE, LIBRARY)

# Truth ``metadata`` per class (plus ``lang``, the document's language): what a retrieval filter may test.
SOURCE_BY_CLASS = {"born_digital": "pdf", "scanned": "scan", "web": "web"}


# ---------------------------------------------------------------------------------------------------------------------
# Labelled questions (questions.jsonl): evidence is written as exact substrings, headings or pages of the reference
# text; `questions_jsonl` turns each into offsets and checks it against the generated truth.
# ---------------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Ev:
    """One evidence item: ``span`` (an exact substring occurring once in the document's reference text),
    ``section`` (a heading text of the truth ``headings``), ``page`` (1-based; ``on_page`` is a substring that must
    lie on that page), or none of them (the whole document)."""

    doc: str
    span: str | None = None
    section: str | None = None
    page: int | None = None
    on_page: str | None = None
    grade: int | None = None


@dataclass(frozen=True)
class Q:
    """One question. ``false_exclusion``: the ``filter`` deliberately excludes the question's own evidence (the
    generator checks that it does; every other filter must let all evidence documents through)."""

    id: str
    question: str
    evidence: tuple[Ev, ...] = ()
    filter: dict | None = None
    answerable: bool = True
    false_exclusion: bool = False


QUESTIONS = (
    Q("demo-01", "How long does it take to replace the tube cartridge of the HX-40 pump?",
      (Ev("born_digital/pump_field_note", span="Keep a spare cartridge on site, because a replacement takes less "
          "than five minutes and avoids a long stop of the line."),)),
    Q("demo-02", "What does fault code E5 mean on the HX-40 pump?",
      (Ev("born_digital/pump_field_note", span="Code E5 means the outlet pressure exceeded the configured limit; "
          "look for a closed valve or a blocked filter downstream before raising the limit."),)),
    Q("demo-03", "How should the HX-40 pump be stored when it is out of use for more than a month?",
      (Ev("born_digital/pump_field_note", page=2, on_page="For storage longer than a month"),)),
    Q("demo-04", "Where should the HX-40 be mounted, and how should its outlet line be routed?",
      (Ev("born_digital/pump_field_note", section="Mounting"),)),
    Q("demo-05", "Under what conditions can the Town Clerk exempt work from the Larkspur Bay quiet hours?",
      (Ev("born_digital/bylaw_quiet_hours", section="5. Exemptions"),)),
    Q("demo-06", "How often should the K2 kettle be descaled in a hard-water area, and how is it done?",
      (Ev("web/kettle_faq", span="In hard-water areas we recommend descaling every four weeks.", grade=2),
       Ev("web/kettle_faq", span="Fill the kettle to the 1.0 litre mark with equal parts water and white vinegar, "
          "bring it to the boil and leave it to stand for an hour.", grade=1))),
    Q("demo-07", "How much sludge did the settling bucket collect during the greywater trial?",
      (Ev("born_digital/lab_notes_right_first", span="The settling bucket collected a surprising amount of "
          "material: about 180 ml of sludge over six days, most of it lint and food particles."),)),
    Q("demo-08", "How did the outlet turbidity of column B compare with column A?",
      (Ev("born_digital/lab_notes_right_first", span="Its outlet turbidity stayed between 3 and 5 NTU, while "
          "column A rose from 6 to 19 NTU over the week."),)),
    Q("demo-09", "Which phone number can residents call about the Heron Street water main works?",
      (Ev("scanned/notice_water_main", span="If you have questions, call our project line on 555-0198 or write "
          "to heron.street@water.larkspurbay.example."),)),
    Q("demo-10", "At what oven temperature is the oat and apple loaf baked?",
      (Ev("scanned/recipe_card_degraded", span="2. Heat the oven to 180 \u00b0C and line a loaf tin with baking "
          "paper."),)),
    Q("demo-11", "When is the Willow Lane allotment open day?",
      (Ev("scanned/allotment_minutes", span="The open day will be held on Saturday 22 June."),)),
    Q("demo-12", "When are the lower cliff steps of the Cliff Path Loop closed?",
      (Ev("web/trail_guide", span="The lower cliff steps close from 1\u00a0November to 28\u00a0February each year "
          "while the seabird colony is nesting."),),
      filter={"source": ["web", "pdf"]}),
    Q("demo-13", "Wann hat die Stadtbibliothek Wiesenfeld samstags ge\u00f6ffnet?",
      (Ev("web/stadtbibliothek_oeffnungszeiten", span="Samstag: 10 bis 16 Uhr"),),
      filter={"lang": "de"}),
    Q("demo-14", "What fine does a second quiet-hours offence carry in Larkspur Bay?",
      (Ev("born_digital/bylaw_quiet_hours", span="A second offence within twelve months carries a fine of 250 "
          "dollars"),),
      filter={"source": "web"}, false_exclusion=True),
    Q("demo-15", "Which document explains how to commission the HX-40 peristaltic pump?",
      (Ev("born_digital/pump_field_note"),)),
    Q("demo-16", "What are the opening hours of the Larkspur Bay public swimming pool?", answerable=False),
)


# ---------------------------------------------------------------------------------------------------------------------
# Layout of paged documents
# ---------------------------------------------------------------------------------------------------------------------

@dataclass
class Line:
    """One placed line: ``text`` as drawn (ligatures, trailing U+00AD at a hyphenated break), ``truth`` as in the
    reference (ligatures written out, no soft hyphen), baseline ``y`` in points from the top of the page."""

    page: int
    col: int  # -1 outside the columns (header, title, table, footer)
    x: float
    y: float
    text: str
    truth: str
    font: str
    size: float
    block: int = -1


@dataclass
class Layout:
    pages: int
    lines: list[Line] = field(default_factory=list)
    blocks_on_page: dict[int, list[int]] = field(default_factory=dict)
    col_width: float = 0.0


_FONT_CACHE: dict[str, pymupdf.Font] = {}


def font(key: str) -> pymupdf.Font:
    name = FONTS[key]
    if name not in _FONT_CACHE:
        _FONT_CACHE[name] = pymupdf.Font(name)
    return _FONT_CACHE[name]


def render_form(text: str, ligatures: bool) -> str:
    """Text as drawn: soft hyphens dropped, and with ``ligatures`` the f-ligature characters substituted."""
    out = text.replace(SHY, "")
    if ligatures:
        for plain, lig in LIGATURES:
            out = out.replace(plain, lig)
    return out


def truth_form(text: str) -> str:
    return text.replace(SHY, "")


def wrap(text: str, key: str, size: float, width: float, ligatures: bool) -> list[tuple[str, str]]:
    """Greedy line breaking at spaces, and at a soft hyphen when the whole word does not fit.

    Returns (drawn text, truth text) per line; a line broken at a soft hyphen ends with U+00AD when drawn.
    """
    f = font(key)

    def fits(parts: list[str]) -> bool:
        return f.text_length(" ".join(parts), fontsize=size) <= width

    lines: list[tuple[str, str]] = []
    cur: list[str] = []
    cur_truth: list[str] = []
    for word in text.split(" "):
        while True:
            drawn = render_form(word, ligatures)
            if fits(cur + [drawn]):
                cur.append(drawn)
                cur_truth.append(truth_form(word))
                break
            pieces = word.split(SHY)
            for k in range(len(pieces) - 1, 0, -1):
                head = "".join(pieces[:k])
                if fits(cur + [render_form(head, ligatures) + SHY]):
                    cur.append(render_form(head, ligatures) + SHY)
                    cur_truth.append(head)
                    lines.append((" ".join(cur), " ".join(cur_truth)))
                    cur, cur_truth = [], []
                    word = SHY.join(pieces[k:])
                    break
            else:
                if not cur:
                    raise ValueError(f"word {word!r} is wider than {width} pt")
                lines.append((" ".join(cur), " ".join(cur_truth)))
                cur, cur_truth = [], []
                continue
            continue
    if cur:
        lines.append((" ".join(cur), " ".join(cur_truth)))
    return lines


def layout(doc: PageDoc) -> Layout:
    """Place header, title, byline, body blocks (flowing left column, right column, next page), table, footer.

    A paragraph never breaks across pages (it moves whole to the next page); a heading stays with the first two
    lines of what follows. Raises ValueError when something does not fit.
    """
    w, h = doc.size
    m = doc.margin
    gutter = 22.0
    text_w = w - 2 * m
    col_w = (text_w - gutter * (doc.columns - 1)) / doc.columns
    out = Layout(pages=0, col_width=col_w)
    head_size, title_size, byline_size = 8.0, 16.0 if doc.size == A4 else 14.0, doc.body_size
    h2_size = doc.body_size + 1.0
    col_bottom_default = h - 62.0

    # Title and byline (page 0, full width).
    y = 100.0 if doc.size == A4 else 84.0
    title_lines = wrap(doc.title, "bold", title_size, text_w, doc.ligatures)
    for drawn, truth in title_lines:
        out.lines.append(Line(0, -1, m, y, drawn, truth, "bold", title_size))
        y += title_size * 1.25
    y += 2.0
    for drawn, truth in wrap(doc.byline, "italic", byline_size, text_w, doc.ligatures):
        out.lines.append(Line(0, -1, m, y, drawn, truth, "italic", byline_size))
        y += doc.leading
    first_top = y + 16.0

    table_top = None
    if doc.table is not None:
        n_rows = len(doc.table.rows)
        table_h = 14.0 + n_rows * 17.0
        table_top = col_bottom_default - table_h
    col_bottom0 = (table_top - 18.0) if table_top is not None else col_bottom_default

    def top(page: int) -> float:
        return first_top if page == 0 else 78.0

    def bottom(page: int) -> float:
        return col_bottom0 if page == 0 else col_bottom_default

    page, col, y = 0, 0, top(0)

    def advance() -> None:
        nonlocal page, col, y
        if col + 1 < doc.columns:
            col += 1
        else:
            page, col = page + 1, 0
        y = top(page)

    def col_x(c: int) -> float:
        return m + c * (col_w + gutter)

    def lines_of(block: Block) -> tuple[list[tuple[str, str]], str, float, float]:
        if block.kind == "h2":
            return wrap(block.text, "bold", h2_size, col_w, doc.ligatures), "bold", h2_size, h2_size * 1.3
        return wrap(block.text, "body", doc.body_size, col_w, doc.ligatures), "body", doc.body_size, doc.leading

    def simulate(at_page: int, at_col: int, at_y: float, n: int, lead: float) -> int:
        """Page on which the last of n lines of height ``lead`` lands, starting at (at_page, at_col, at_y)."""
        for _ in range(n):
            if at_y + lead > bottom(at_page) + 0.1:
                at_col += 1
                if at_col >= doc.columns:
                    at_page, at_col = at_page + 1, 0
                at_y = top(at_page)
            at_y += lead
        return at_page

    for i, block in enumerate(doc.body):
        if block.kind == "colbreak":
            advance()
            continue
        lines, key, size, lead = lines_of(block)
        before = (8.0 if block.kind == "h2" else 4.0) if y > top(page) + 0.1 else 0.0
        if block.kind == "h2":
            # Keep the heading with the first two lines of the paragraph that follows.
            nxt = doc.body[i + 1] if i + 1 < len(doc.body) else None
            keep = lead * len(lines) + before
            if nxt is not None and nxt.kind == "p":
                keep += doc.leading * min(2, len(lines_of(nxt)[0]))
            if y + keep > bottom(page):
                advance()
                before = 0.0
        elif simulate(page, col, y + before, len(lines), lead) != page:
            # A paragraph never breaks across pages: it starts on the next page.
            page, col, y, before = page + 1, 0, top(page + 1), 0.0
        y += before
        for drawn, truth in lines:
            if y + lead > bottom(page) + 0.1:
                advance()
            y += lead
            out.lines.append(Line(page, col, col_x(col), y, drawn, truth, key, size, block=i))
        out.blocks_on_page.setdefault(page, []).append(i)
    out.pages = page + 1
    if doc.table is not None and out.pages != 1:
        raise ValueError(f"{doc.name}: a document with a table must fit on one page")

    # Running header and footer on every page.
    for p in range(out.pages):
        hl, hr = doc.header
        out.lines.append(Line(p, -2, m, 40.0, render_form(hl, doc.ligatures), hl, "small", head_size))
        x_r = w - m - font("small").text_length(render_form(hr, doc.ligatures), fontsize=head_size)
        out.lines.append(Line(p, -2, x_r, 40.0, render_form(hr, doc.ligatures), hr, "small", head_size))
        fy = h - 34.0
        out.lines.append(Line(p, -3, m, fy, render_form(doc.footer, doc.ligatures), doc.footer, "small",
                              head_size))
        if doc.page_numbers:
            pn = f"Page {p + 1} of {out.pages}"
            x_r = w - m - font("small").text_length(pn, fontsize=head_size)
            out.lines.append(Line(p, -3, x_r, fy, pn, pn, "small", head_size))
    return out


def truth_page_lines(doc: PageDoc, lay: Layout) -> list[list[str]]:
    """The reference lines of each page, in reading order: header, (title, byline), body blocks, (table caption and
    cells, row by row), footer."""
    pages: list[list[str]] = []
    for p in range(lay.pages):
        out = [ln.truth for ln in lay.lines if ln.page == p and ln.col == -2]
        if p == 0:
            out += [truth_form(doc.title), truth_form(doc.byline)]
        out += [truth_form(doc.body[i].text) for i in lay.blocks_on_page.get(p, [])]
        if p == 0 and doc.table is not None:
            out.append(doc.table.caption)
            out += [cell for row in doc.table.rows for cell in row]
        out += [ln.truth for ln in lay.lines if ln.page == p and ln.col == -3]
        pages.append(out)
    return pages


def truth_lines(doc: PageDoc, lay: Layout) -> list[str]:
    """The reference text, one line per block, in reading order, page after page (`truth_page_lines`)."""
    return [line for page in truth_page_lines(doc, lay) for line in page]


def draw_pdf(doc: PageDoc, lay: Layout) -> pymupdf.Document:
    """Draw the layout into a new PDF. Content-stream order per page: header, title, left column, right column
    (swapped when ``right_first``), table, footer, then any off-page text."""
    w, h = doc.size
    pdf = pymupdf.open()
    grey = (0.3, 0.3, 0.3)
    for p in range(lay.pages):
        page = pdf.new_page(width=w, height=h)

        def write(lines: list[Line], color: tuple[float, float, float] = (0, 0, 0)) -> None:
            if not lines:
                return
            tw = pymupdf.TextWriter(page.rect, color=color)
            for ln in lines:
                tw.append((ln.x, ln.y), ln.text, font=font(ln.font), fontsize=ln.size)
            tw.write_text(page)

        on_page = [ln for ln in lay.lines if ln.page == p]
        write([ln for ln in on_page if ln.col == -2], grey)
        page.draw_line((doc.margin, 46.0), (w - doc.margin, 46.0), color=grey, width=0.5)
        write([ln for ln in on_page if ln.col == -1])
        cols = [[ln for ln in on_page if ln.col == c] for c in range(doc.columns)]
        if doc.right_first:
            cols.reverse()
        for c in cols:
            write(c)
        if p == 0 and doc.table is not None:
            draw_table(page, doc, lay)
        page.draw_line((doc.margin, h - 46.0), (w - doc.margin, h - 46.0), color=grey, width=0.5)
        write([ln for ln in on_page if ln.col == -3], grey)
        if doc.offpage and p == lay.pages - 1:
            # Below the media box: not visible, so it must not appear in the extracted text.
            tw = pymupdf.TextWriter(page.rect)
            tw.append((doc.margin, h + 40.0), doc.offpage, font=font("small"), fontsize=8.0)
            tw.write_text(page)
    pdf.set_metadata({
        "title": doc.title, "author": doc.header[0], "subject": "", "keywords": "", "creator": PRODUCER,
        "producer": PRODUCER, "creationDate": PDF_DATE, "modDate": PDF_DATE, "trapped": "",
    })
    return pdf


def draw_table(page: pymupdf.Page, doc: PageDoc, lay: Layout) -> None:
    t = doc.table
    assert t is not None
    w, h = doc.size
    m = doc.margin
    text_w = w - 2 * m
    row_h = 17.0
    y0 = h - 62.0 - (14.0 + len(t.rows) * row_h)
    tw = pymupdf.TextWriter(page.rect)
    tw.append((m, y0 + 9.0), render_form(t.caption, doc.ligatures), font=font("italic"), fontsize=9.5)
    top = y0 + 14.0
    xs = [m]
    for frac in t.widths:
        xs.append(xs[-1] + frac * text_w)
    for r, row in enumerate(t.rows):
        for c, cell in enumerate(row):
            key = "cellbold" if r == 0 else "body"
            tw.append((xs[c] + 4.0, top + r * row_h + 12.0), render_form(cell, doc.ligatures), font=font(key),
                      fontsize=9.5)
    tw.write_text(page)
    for r in range(len(t.rows) + 1):
        page.draw_line((xs[0], top + r * row_h), (xs[-1], top + r * row_h), color=(0, 0, 0), width=0.5)
    for x in xs:
        page.draw_line((x, top), (x, top + len(t.rows) * row_h), color=(0, 0, 0), width=0.5)


def save_pdf(pdf: pymupdf.Document, path: Path) -> None:
    """Subset the embedded fonts (MuPDF's own subsetter: deterministic, keeps ToUnicode) and save without a file
    ID, with unused objects dropped and streams compressed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pdf.subset_fonts()
    pdf.save(str(path), garbage=4, deflate=True, no_new_id=True)


# ---------------------------------------------------------------------------------------------------------------------
# Scans
# ---------------------------------------------------------------------------------------------------------------------

def noise_bytes(seed: str, n: int) -> np.ndarray:
    """n uniform bytes from SHAKE-256 of the seed: identical on every platform and library version."""
    return np.frombuffer(hashlib.shake_256(f"ingestaudit-demo:{seed}".encode()).digest(n), dtype=np.uint8)


def scan_image(scan: Scan) -> Image.Image:
    """Render page 1 of the source document at ``scan.dpi`` in grey and degrade it: contrast squeezed to
    [ink, paper], rotation (bicubic, paper-coloured fill), Gaussian blur, then seeded specks and drop-outs."""
    lay = layout(scan.source)
    pdf = draw_pdf(scan.source, lay)
    pix = pdf[0].get_pixmap(dpi=scan.dpi, colorspace=pymupdf.csGRAY, alpha=False)
    img = Image.frombytes("L", (pix.width, pix.height), pix.samples)
    if (scan.ink, scan.paper) != (0, 255):
        lut = [round(scan.ink + v * (scan.paper - scan.ink) / 255) for v in range(256)]
        img = img.point(lut)
    if scan.angle:
        img = img.rotate(scan.angle, resample=Image.Resampling.BICUBIC, fillcolor=scan.paper)
    if scan.blur:
        img = img.filter(ImageFilter.GaussianBlur(scan.blur))
    if scan.specks:
        arr = np.array(img, dtype=np.uint8)
        u = noise_bytes(scan.seed, 2 * arr.size).astype(np.uint16).reshape(2, *arr.shape)
        draw = (u[0] << 8) | u[1]  # uniform in [0, 65536)
        arr[draw < scan.specks] = scan.ink
        arr[draw >= 65536 - scan.specks] = scan.paper
        img = Image.fromarray(arr, mode="L")
    return img


def png_bytes(img: Image.Image, dpi: int) -> bytes:
    buf = BytesIO()
    img.save(buf, format="PNG", dpi=(dpi, dpi), compress_level=9)
    return buf.getvalue()


def image_only_pdf(png: bytes, size: tuple[float, float], title: str) -> pymupdf.Document:
    pdf = pymupdf.open()
    page = pdf.new_page(width=size[0], height=size[1])
    page.insert_image(page.rect, stream=png)
    pdf.set_metadata({
        "title": title, "author": "", "subject": "", "keywords": "", "creator": PRODUCER, "producer": PRODUCER,
        "creationDate": PDF_DATE, "modDate": PDF_DATE, "trapped": "",
    })
    return pdf


# ---------------------------------------------------------------------------------------------------------------------
# HTML
# ---------------------------------------------------------------------------------------------------------------------

def visible(inner_html: str) -> str:
    """Visible text of an inline HTML fragment: tags dropped, entities decoded, soft hyphens removed."""
    return truth_form(html.unescape(re.sub(r"<[^>]+>", "", inner_html)))


def web_html(page: WebPage) -> str:
    e = html.escape
    css = ("body{font-family:Georgia,serif;margin:0}header,main,footer{max-width:46rem;margin:auto;padding:1rem}"
           "nav ul{list-style:none;display:flex;gap:1rem;padding:0}"
           ".cookie-banner{position:fixed;bottom:0;left:0;right:0;background:#222;color:#fff;padding:1rem}"
           "footer{font-size:small;color:#555}")
    out = [
        "<!DOCTYPE html>",
        f'<html lang="{page.lang}">',
        "<head>",
        '  <meta charset="utf-8">',
        f"  <title>{e(page.title)}</title>",
        f"  <style>{css}</style>",
        f"  <script>{page.script}</script>",
        "</head>",
        "<body>",
        "  <header>",
        f'    <p class="site-name">{e(page.site)}</p>',
        "    <nav>",
        "      <ul>",
    ]
    for item in page.nav:
        slug = re.sub(r"[^a-z0-9]+", "-", item.lower()).strip("-") or "home"
        out.append(f'        <li><a href="/{slug}">{e(item)}</a></li>')
    out += ["      </ul>", "    </nav>", "  </header>", "  <main>"]
    for i, (tag, inner) in enumerate(page.main):
        if tag in ("h1", "h2", "p"):
            out.append(f"    <{tag}>{inner}</{tag}>")
        elif tag == "ul":
            out.append("    <ul>")
            out += [f"      <li>{item}</li>" for item in inner]  # type: ignore[union-attr]
            out.append("    </ul>")
        elif tag == "table":
            rows = inner  # type: ignore[assignment]
            out.append("    <table>")
            out.append("      <thead><tr>" + "".join(f"<th>{c}</th>" for c in rows[0]) + "</tr></thead>")
            out.append("      <tbody>")
            out += ["        <tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows[1:]]
            out.append("      </tbody>")
            out.append("    </table>")
        if i == 1:
            out.append(f"    <!-- {page.comment} -->")
            out.append(f"    <div hidden>{e(page.hidden)}</div>")
    out += ["  </main>", "  <footer>"]
    out += [f"    <p>{e(item)}</p>" for item in page.footer]
    out += [
        "  </footer>",
        '  <div class="cookie-banner" role="dialog">',
        f"    <p>{e(page.cookie)}</p>",
        f'    <button type="button">{e(page.buttons[0])}</button>',
        f'    <button type="button">{e(page.buttons[1])}</button>',
        "  </div>",
        "</body>",
        "</html>",
        "",
    ]
    return "\n".join(out)


def web_truth(page: WebPage) -> tuple[list[str], list[str], list[str], list[dict], list[str]]:
    """(all visible lines in DOM order, main-content lines, boilerplate lines, headings, tables)."""
    main: list[str] = []
    headings: list[dict] = []
    tables: list[str] = []
    for tag, inner in page.main:
        if tag in ("h1", "h2"):
            main.append(visible(inner))  # type: ignore[arg-type]
            headings.append({"level": int(tag[1]), "text": visible(inner)})  # type: ignore[arg-type]
        elif tag == "p":
            main.append(visible(inner))  # type: ignore[arg-type]
        elif tag == "ul":
            main += [visible(item) for item in inner]  # type: ignore[union-attr]
        elif tag == "table":
            rows = inner  # type: ignore[assignment]
            main += [visible(c) for row in rows for c in row]
            tables.append(table_html(rows))
    head = [page.site, *page.nav]
    tail = [*page.footer, page.cookie, *page.buttons]
    return head + main + tail, main, head + tail, headings, tables


def table_html(rows: tuple[tuple[str, ...], ...]) -> str:
    """Reference table HTML as a person labels it: the header row in <thead> with <th>, the others in <tbody> with
    <td>; cell text escaped."""
    def tr(row: tuple[str, ...], tag: str) -> str:
        return "<tr>" + "".join(f"<{tag}>{html.escape(visible(c), quote=False)}</{tag}>" for c in row) + "</tr>"

    return ("<table><thead>" + tr(rows[0], "th") + "</thead><tbody>" + "".join(tr(r, "td") for r in rows[1:])
            + "</tbody></table>")


# ---------------------------------------------------------------------------------------------------------------------
# Truth files and consistency checks
# ---------------------------------------------------------------------------------------------------------------------

def collapse(text: str) -> str:
    return " ".join(text.split())


def checks_json(checks: tuple[tuple[str, ...], ...]) -> list[dict]:
    out = []
    for c in checks:
        if c[0] in ("present", "absent"):
            out.append({"type": c[0], "text": c[1]})
        else:
            out.append({"type": "order", "before": c[1], "after": c[2]})
    return out


def assert_checks_hold(name: str, text: str, checks: tuple[tuple[str, ...], ...]) -> None:
    """Every check must hold on the reference text itself (whitespace collapsed, exact match)."""
    flat = collapse(text)
    for c in checks:
        if c[0] == "present" and c[1] not in flat:
            raise AssertionError(f"{name}: present check {c[1]!r} not in the reference")
        if c[0] == "absent" and c[1] in flat:
            raise AssertionError(f"{name}: absent check {c[1]!r} is in the reference")
        if c[0] in ("order", "order!"):
            a, b = flat.find(c[1]), flat.find(c[2])
            if a < 0 or b < 0 or not a + len(c[1]) <= b:
                raise AssertionError(f"{name}: order check {c[1:]!r} does not hold on the reference")


def assert_cross_column(doc: PageDoc, lay: Layout, before: str, after: str) -> None:
    """``before`` must lie on one line of the left column, strictly below the one line holding ``after`` in the
    right column of the same page: then line-by-line interleaving (sort by y, then x) puts ``after`` first, and
    both snippets survive interleaving intact."""
    body = [ln for ln in lay.lines if ln.col >= 0]
    joined, spans = "", []
    for ln in body:
        start = len(joined) + (1 if joined else 0)
        joined = f"{joined} {ln.truth}" if joined else ln.truth
        spans.append((start, len(joined), ln))

    def lines_for(snippet: str) -> list[Line]:
        at = joined.find(snippet)
        if at < 0:
            raise AssertionError(f"{doc.name}: {snippet!r} is not in the body lines")
        return [ln for s, e, ln in spans if s < at + len(snippet) and e > at]

    lb, la = lines_for(before), lines_for(after)
    ok = (len(lb) == 1 and len(la) == 1 and lb[0].col == 0 and la[0].col == 1
          and len({ln.page for ln in lb + la}) == 1 and min(ln.y for ln in lb) > max(ln.y for ln in la))
    if not ok:
        raise AssertionError(f"{doc.name}: order check {before!r} -> {after!r} is not a cross-column check")


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))


def write_json(path: Path, obj: dict) -> None:
    write_text(path, json.dumps(obj, ensure_ascii=False, indent=2) + "\n")


def truth_metadata(doc_class: str, language: str) -> dict:
    """The truth ``metadata`` of a document: its language and its source kind (`SOURCE_BY_CLASS`)."""
    return {"lang": language, "source": SOURCE_BY_CLASS[doc_class]}


def filter_passes(flt: dict | None, metadata: dict) -> bool:
    """The hard-filter rule of ``ingestaudit.questions.filter_passes``, restated: every field present and equal to
    the value (or one of the listed values)."""
    return all(k in metadata and metadata[k] in (v if isinstance(v, list) else [v]) for k, v in (flt or {}).items())


def questions_jsonl(texts: dict[str, str], truths: dict[str, dict], pages: dict[str, list[str]]) -> str:
    """`QUESTIONS` as ``questions.jsonl`` lines, span offsets computed from the substrings (code points, end
    exclusive). Raises AssertionError when a span is not exactly once in its reference text, a section is not a
    heading of the document, a page does not hold its ``on_page`` text, or a filter does not do what the question
    says (lets the evidence through, or for ``false_exclusion`` excludes every evidence document)."""
    lines: list[str] = []
    ids: set[str] = set()
    for q in QUESTIONS:
        assert q.id not in ids, f"duplicate question id {q.id}"
        ids.add(q.id)
        assert q.answerable == bool(q.evidence), f"{q.id}: evidence iff answerable"
        relevant: list[dict] = []
        for ev in q.evidence:
            text = texts[ev.doc]
            item: dict = {"doc": ev.doc}
            if ev.span is not None:
                assert text.count(ev.span) == 1, f"{q.id}: span {ev.span!r} occurs {text.count(ev.span)} times"
                start = text.index(ev.span)
                assert text[start:start + len(ev.span)] == ev.span
                item.update(start=start, end=start + len(ev.span))
            elif ev.section is not None:
                headings = [h["text"] for h in truths[ev.doc]["headings"]]
                assert headings.count(ev.section) == 1, f"{q.id}: {ev.section!r} is not one heading of {ev.doc}"
                item["section"] = ev.section
            elif ev.page is not None:
                doc_pages = pages[ev.doc]
                assert len(doc_pages) > 1, f"{q.id}: page evidence wants a multi-page document, not {ev.doc}"
                assert ev.on_page is not None and ev.on_page in doc_pages[ev.page - 1], f"{q.id}: page {ev.page}"
                assert sum(ev.on_page in pg for pg in doc_pages) == 1, f"{q.id}: {ev.on_page!r} on several pages"
                item["page"] = ev.page
            if ev.grade is not None:
                item["grade"] = ev.grade
            relevant.append(item)
        passes = [filter_passes(q.filter, truths[ev.doc]["metadata"]) for ev in q.evidence]
        if q.false_exclusion:
            assert q.filter and not any(passes), f"{q.id}: the filter must exclude every evidence document"
        else:
            assert all(passes), f"{q.id}: the filter excludes the question's own evidence"
        out: dict = {"id": q.id, "question": q.question}
        if relevant:
            out["relevant"] = relevant
        if q.filter is not None:
            out["filter"] = q.filter
        if not q.answerable:
            out["answerable"] = False
        lines.append(json.dumps(out, ensure_ascii=False) + "\n")
    return "".join(lines)


def paged_truth(doc: PageDoc, lay: Layout) -> tuple[str, dict]:
    lines = truth_lines(doc, lay)
    text = "\n".join(lines) + "\n"
    assert_checks_hold(doc.name, text, doc.checks)
    for c in doc.checks:
        if c[0] == "order!":
            assert_cross_column(doc, lay, c[1], c[2])
    if SHY in text or any(lig in text for _, lig in LIGATURES):
        raise AssertionError(f"{doc.name}: the reference must not contain soft hyphens or ligatures")
    boiler_without = [ln.truth for ln in lay.lines if ln.col in (-2, -3)]
    truth: dict = {
        "language": doc.language,
        "headings": [{"level": 1, "text": truth_form(doc.title)}]
        + [{"level": 2, "text": truth_form(b.text)} for b in doc.body if b.kind == "h2"],
        "checks": checks_json(doc.checks),
    }
    if doc.table is not None:
        truth["tables"] = [table_html(doc.table.rows)]
    if doc.boilerplate_with:
        for seg in doc.boilerplate_with:
            if seg not in collapse(text):
                raise AssertionError(f"{doc.name}: boilerplate 'with' segment {seg!r} is not in the reference")
        truth["boilerplate"] = {"with": list(doc.boilerplate_with), "without": sorted(set(boiler_without))}
    if doc.dup_group:
        truth["dup_group"] = doc.dup_group
    return text, truth


def generate(out: Path) -> dict[str, str]:
    """Write docs/, truth/, questions.jsonl and MANIFEST.json under ``out`` (docs/ and truth/ are replaced). Returns
    {relative path: sha256} of every generated file."""
    for sub in ("docs", "truth"):
        if (out / sub).exists():
            shutil.rmtree(out / sub)
    written: list[Path] = []

    def put_bytes(rel: str, data: bytes) -> None:
        p = out / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        written.append(p)

    texts: dict[str, str] = {}
    truths: dict[str, dict] = {}
    pages: dict[str, list[str]] = {}

    def put_truth(rel_stem: str, text: str, truth: dict, page_texts: list[str] | None = None) -> None:
        truth = {**truth, "metadata": truth_metadata(rel_stem.split("/", 1)[0], truth["language"])}
        write_text(out / f"truth/{rel_stem}.txt", text)
        write_json(out / f"truth/{rel_stem}.json", truth)
        written.extend([out / f"truth/{rel_stem}.txt", out / f"truth/{rel_stem}.json"])
        texts[rel_stem], truths[rel_stem], pages[rel_stem] = text, truth, page_texts or [text]

    def page_texts(doc: PageDoc, lay: Layout) -> list[str]:
        return ["\n".join(lines) + "\n" for lines in truth_page_lines(doc, lay)]

    layouts: dict[str, tuple[str, dict, list[str]]] = {}
    for doc in BORN_DIGITAL:
        lay = layout(doc)
        pdf = draw_pdf(doc, lay)
        save_pdf(pdf, out / f"docs/born_digital/{doc.name}.pdf")
        written.append(out / f"docs/born_digital/{doc.name}.pdf")
        text, truth = paged_truth(doc, lay)
        layouts[doc.name] = (text, truth, page_texts(doc, lay))
        put_truth(f"born_digital/{doc.name}", text, truth, layouts[doc.name][2])

    for scan in SCANS:
        src = scan.source
        if src.name not in layouts:
            lay = layout(src)
            layouts[src.name] = (*paged_truth(src, lay), page_texts(src, lay))
        text, truth, src_pages = layouts[src.name]
        png = png_bytes(scan_image(scan), scan.dpi)
        if scan.pdf:
            pdf = image_only_pdf(png, src.size, src.title)
            save_pdf(pdf, out / f"docs/scanned/{scan.name}.pdf")
            written.append(out / f"docs/scanned/{scan.name}.pdf")
        else:
            put_bytes(f"docs/scanned/{scan.name}.png", png)
        put_truth(f"scanned/{scan.name}", text, truth, src_pages)

    for page in WEB:
        put_bytes(f"docs/web/{page.name}.html", web_html(page).encode("utf-8"))
        lines, main, boiler, headings, tables = web_truth(page)
        text = "\n".join(lines) + "\n"
        assert_checks_hold(page.name, text, page.checks)
        truth = {"language": page.lang, "headings": headings, "checks": checks_json(page.checks)}
        if tables:
            truth["tables"] = tables
        # Segments of three words or more only: a short one ("Home", "Route") also occurs inside other text.
        truth["boilerplate"] = {"with": [t for t in main if len(t.split()) >= 3],
                                "without": [t for t in boiler if len(t.split()) >= 3]}
        put_truth(f"web/{page.name}", text, truth)

    for doc_id, doc_pages in pages.items():
        assert "".join(doc_pages) == texts[doc_id], f"{doc_id}: the pages do not make up the reference text"
    write_text(out / "questions.jsonl", questions_jsonl(texts, truths, pages))
    written.append(out / "questions.jsonl")

    hashes = {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(written)}
    manifest = {
        "generator": "scripts/make_demo_corpus.py",
        "versions": generator_versions(),
        "files": hashes,
    }
    write_json(out / "MANIFEST.json", manifest)
    return hashes


def generator_versions() -> dict[str, str]:
    """Versions that the bytes of the PDFs and images depend on."""
    from PIL import features

    return {
        "pymupdf": pymupdf.__version__,
        "mupdf": pymupdf.VersionFitz,
        "pillow": PILLOW_VERSION,
        "pillow_zlib": str(features.version("zlib")),
        "numpy": np.__version__,
        "zlib": zlib.ZLIB_RUNTIME_VERSION,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output corpus folder (default {DEFAULT_OUT})")
    args = ap.parse_args(argv)
    hashes = generate(args.out)
    size = sum((args.out / rel).stat().st_size for rel in hashes)
    print(f"wrote {len(hashes)} files ({size / 1024:.0f} KiB) under {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
