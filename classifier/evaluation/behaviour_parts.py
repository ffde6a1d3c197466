"""The words and templates of the behaviour suite's two parts, which
:mod:`classifier.evaluation.behaviour` fills: ``dev``, for choosing models, and ``test``, kept
for reporting. The parts share no word that carries sentiment, no modifier, name, place or
neutral clause, and no template, so a model tuned on one has seen nothing of the other but the
plain nouns (movie, film). The dev part was broadened on 2026-11-28, when the shipped model got
nearly all of it right: rarer sentiment words (many of them words the treebank's training trees
label, others a reader's), more templates per capability ("anything but", "despite", a
sentence-opening "however"), and 200 sentences a capability; words and templates that the test
part also had were left out unread.

A template is ``(label, text)``. ``label`` ``"both"`` makes sentences of either label: its slots
``{s_KIND}`` take words of the sentence's own polarity (``KIND_pos`` for a positive sentence)
and ``{o_KIND}`` of the opposite one. A fixed label (the negations) takes its slots as named.
``{NAME_2}`` is a second, different word of the list ``NAME``. ``a`` before a vowel is written
``an`` when the sentence is made.

Example:
    >>> DEV["words"]["adj_pos"][:3], TEST["words"]["adj_pos"][:3]
    (('good', 'great', 'wonderful'), ('amazing', 'outstanding', 'terrific'))
"""

from __future__ import annotations

# fmt: off
DEV = {
    "words": {
        "work": ("movie", "film"),
        "aspect": ("acting", "plot", "script", "soundtrack", "dialogue", "ending", "cast"),
        "adj_pos": ("good", "great", "wonderful", "excellent", "brilliant", "superb", "delightful",
                    "enjoyable", "fantastic", "charming", "moving", "beautiful", "captivating",
                    "heartwarming", "witty", "sublime", "dazzling", "touching", "inventive",
                    "refreshing", "masterful", "absorbing", "admirable", "adorable", "astonishing",
                    "beguiling", "breathtaking", "charismatic", "elegant", "eloquent",
                    "enchanting", "endearing", "engrossing", "exhilarating", "flawless",
                    "imaginative", "ingenious", "insightful", "joyous", "lively", "mesmerizing",
                    "poignant", "riveting", "stirring", "thoughtful", "uplifting", "vibrant",
                    "whimsical", "stupendous", "marvellous", "entrancing", "winsome", "exquisite",
                    "heartfelt", "nuanced", "deft", "lush", "majestic", "uproarious", "haunting",
                    "sparkling", "gorgeous", "buoyant", "rollicking", "sprightly"),
        "adj_neg": ("bad", "terrible", "awful", "boring", "dull", "poor", "dreadful", "tedious",
                    "disappointing", "weak", "lousy", "forgettable", "insipid", "clunky",
                    "laughable", "incoherent", "pretentious", "unwatchable", "overlong", "stale",
                    "wooden", "hackneyed", "appalling", "banal", "bloated", "convoluted", "dismal",
                    "disjointed", "feeble", "flimsy", "formulaic", "ghastly", "grating", "idiotic",
                    "insufferable", "ludicrous", "mindless", "muddled", "plodding", "preachy",
                    "shoddy", "stilted", "unfunny", "woeful", "lamentable", "deplorable",
                    "asinine", "cringeworthy", "drab", "lifeless", "limp", "lackluster", "tepid",
                    "vapid", "inane", "trite", "turgid", "ponderous", "leaden", "interminable",
                    "sluggish", "slapdash", "haphazard", "tacky", "garish", "overwrought",
                    "overblown", "saccharine", "cloying", "mawkish"),
        "verb_pos": ("love", "enjoy", "like"),
        "verb_neg": ("hate", "dislike", "despise"),
        "verbed_pos": ("loved", "enjoyed", "liked"),
        "verbed_neg": ("hated", "disliked", "despised"),
        "noun_pos": ("masterpiece", "gem", "triumph", "treat", "classic", "revelation", "joy"),
        "noun_neg": ("mess", "disaster", "waste of time", "letdown", "dud", "misfire", "slog",
                     "fiasco", "turkey"),
        # Negated, these read plainly as the opposite ("not good", "not boring at all").
        "not_pos": ("good", "great", "enjoyable", "interesting", "original", "memorable", "funny",
                    "compelling", "believable", "smart", "thoughtful", "imaginative", "coherent",
                    "nuanced", "heartfelt"),
        "not_neg": ("bad", "boring", "dull", "disappointing", "predictable", "tedious", "slow",
                    "silly", "annoying", "cheesy", "preachy", "formulaic", "pretentious",
                    "forgettable", "trite", "sluggish", "mawkish"),
        # Gradable: "very good", "somewhat good", "a bit dull".
        "grad_pos": ("good", "enjoyable", "interesting", "clever", "original", "charming", "witty",
                     "imaginative"),
        "grad_neg": ("boring", "dull", "tedious", "weak", "predictable", "lifeless",
                     "disappointing", "preachy", "formulaic", "stilted", "trite"),
        # Extreme: "absolutely brilliant", not "very brilliant".
        "ext_pos": ("brilliant", "superb", "wonderful", "fantastic", "breathtaking", "flawless",
                    "mesmerizing", "riveting"),
        "ext_neg": ("awful", "terrible", "dreadful", "lousy", "appalling", "dismal"),
        "intensifier": ("very", "really", "extremely", "incredibly", "so", "really very"),
        "ext_intensifier": ("absolutely", "truly"),
        "verb_intensifier": ("really", "truly"),
        "diminisher_pos": ("somewhat", "fairly", "reasonably"),
        "diminisher_neg": ("a bit", "slightly", "somewhat"),
        "middle": ("given the time it took", "having seen it twice", "to be honest",
                   "as someone who watches a lot of films", "looking back on it now",
                   "after talking it over with friends"),
        "name": ("Maria", "John", "Aisha", "Wei", "Carlos", "Emma", "Oliver", "Fatima", "Kenji",
                 "Sofia", "Liam", "Priya"),
        "city": ("Boston", "Madrid", "Lagos", "Mumbai", "Toronto", "Berlin"),
    },
    "templates": {
        "vocabulary": (
            ("both", "The {aspect} was {s_adj}."),
            ("both", "This {work} is {s_adj}."),
            ("both", "I {s_verbed} the {aspect}."),
            ("both", "This {work} is a {s_noun}."),
            ("both", "What a {s_adj} {work}!"),
            ("both", "Honestly, the {aspect} was {s_adj}."),
            ("both", "I thought the {work} was {s_adj} from start to finish."),
        ),
        "negated_positive": (
            ("negative", "The {aspect} was not {not_pos}."),
            ("negative", "This {work} wasn't {not_pos}."),
            ("negative", "I didn't {verb_pos} the {aspect}."),
            ("negative", "I would not call the {work} {not_pos}."),
            ("negative", "I didn't think the {aspect} was {not_pos}."),
            ("negative", "No one would call the {aspect} {not_pos}."),
            ("negative", "The {work} was hardly {not_pos}."),
            ("negative", "It is not a {not_pos} {work}."),
            ("negative", "I never found the {aspect} {not_pos}."),
            ("negative", "There was nothing {not_pos} about the {aspect}."),
            ("negative", "The {aspect} never felt {not_pos}."),
            ("negative", "The {work} was far from {not_pos}."),
        ),
        "negated_negative": (
            ("positive", "The {aspect} was not {not_neg} at all."),
            ("positive", "This {work} was never {not_neg}."),
            ("positive", "I didn't find the {aspect} {not_neg} at all."),
            ("positive", "The {aspect} did not disappoint."),
            ("positive", "The {aspect} wasn't {not_neg} in any way."),
            ("positive", "No part of the {work} was {not_neg}."),
            ("positive", "The {work} is hardly {not_neg}."),
            ("positive", "Nobody would call the {aspect} {not_neg}."),
            ("positive", "It is not a {not_neg} {work} at all."),
            ("positive", "The {aspect} was anything but {not_neg}."),
            ("positive", "The {aspect} never felt {not_neg}."),
        ),
        "negation_neutral_middle": (
            ("negative", "I don't think, {middle}, that the {work} was {not_pos}."),
            ("negative", "I can't say, {middle}, that I {verbed_pos} the {aspect}."),
            ("positive", "I don't think, {middle}, that the {aspect} was {not_neg} at all."),
            ("positive", "I would never say, {middle}, that the {work} was {not_neg}."),
            ("negative", "Nobody, {middle}, would call the {aspect} {not_pos}."),
            ("positive", "It was never, {middle}, a {not_neg} {work}."),
            ("negative", "The {aspect} was not, {middle}, {not_pos}."),
            ("positive", "The {aspect} was not, {middle}, {not_neg} at all."),
        ),
        "used_to_but_now": (
            ("both", "I used to think the {work} was {o_adj}, but now I think it is {s_adj}."),
            ("both", "I used to {o_verb} this {work}, but now I {s_verb} it."),
            ("both", "I used to find the {aspect} {o_adj}, but now I find it {s_adj}."),
            ("both", "At first I found the {work} {o_adj}, but now I find it {s_adj}."),
            ("both", "I once thought the {aspect} was {o_adj}; now I think it is {s_adj}."),
        ),
        "contrast_but": (
            ("both", "The {aspect} was {o_adj}, but overall the {work} was {s_adj}."),
            ("both", "Although the {aspect} was {o_adj}, the {work} itself was {s_adj}."),
            ("positive", "The {aspect} was {adj_neg} but the {aspect_2} was {adj_pos} and I'd "
                         "watch it again."),
            ("negative", "The {aspect} was {adj_pos} but the {aspect_2} was {adj_neg} and I "
                         "wouldn't watch it again."),
            ("both", "Despite a {o_adj} {aspect}, the {work} was {s_adj}."),
            ("both", "The {aspect} was {o_adj}, yet the {work} was {s_adj}."),
            ("both", "The {aspect} was {o_adj}; however, the {work} was {s_adj}."),
        ),
        "intensifiers": (
            ("both", "The {aspect} was {intensifier} {s_grad}."),
            ("both", "This {work} is {ext_intensifier} {s_ext}."),
            ("both", "I {verb_intensifier} {s_verbed} the {aspect}."),
            ("both", "The {work} felt {intensifier} {s_grad} to me."),
            ("both", "It was a {ext_intensifier} {s_ext} {work}."),
        ),
        "diminishers": (
            ("both", "The {aspect} was {s_diminisher} {s_grad}."),
            ("both", "I found the {work} {s_diminisher} {s_grad}."),
            ("both", "The {work} is {s_diminisher} {s_grad}, I suppose."),
        ),
        "names": (
            ("both", "{name} and I watched the {work} in {city}, and it was {s_adj}."),
            ("both", "My friend {name} recommended this {work}, and I {s_verbed} it."),
            ("both", "{name} said the {aspect} was {s_adj}, and I agree."),
            ("both", "{name} thought the {work} was {s_adj}."),
            ("both", "The {work} we saw in {city} was {s_adj}."),
        ),
    },
}

TEST = {
    "words": {
        "work": ("movie", "film"),
        "aspect": ("story", "screenplay", "score", "cinematography", "direction",
                   "lead performance"),
        "adj_pos": ("amazing", "outstanding", "terrific", "impressive", "marvelous", "stunning",
                    "splendid", "magnificent", "remarkable", "exceptional", "lovely", "first-rate"),
        "adj_neg": ("horrible", "mediocre", "atrocious", "pathetic", "abysmal", "lame", "pointless",
                    "bland", "sloppy", "dreary", "tiresome", "amateurish"),
        "verb_pos": ("adore", "admire", "appreciate"),
        "verb_neg": ("loathe", "detest", "abhor"),
        "verbed_pos": ("adored", "admired", "appreciated"),
        "verbed_neg": ("loathed", "detested", "abhorred"),
        "noun_pos": ("joy to watch", "delight", "winner", "must-see"),
        "noun_neg": ("failure", "chore to sit through", "bore", "flop"),
        "not_pos": ("entertaining", "engaging", "convincing", "exciting", "fun", "gripping"),
        "not_neg": ("bland", "confusing", "clichéd", "repetitive", "tiresome", "shallow"),
        "grad_pos": ("entertaining", "engaging", "pleasant", "impressive", "satisfying",
                     "effective"),
        "grad_neg": ("bland", "clumsy", "messy", "flat", "repetitive", "confusing"),
        "ext_pos": ("magnificent", "stunning", "marvelous", "outstanding"),
        "ext_neg": ("atrocious", "abysmal", "horrible", "pathetic"),
        "intensifier": ("remarkably", "exceptionally", "thoroughly", "unbelievably",
                        "extraordinarily"),
        "ext_intensifier": ("utterly", "simply"),
        "verb_intensifier": ("genuinely",),
        "diminisher_pos": ("moderately", "mildly", "kind of"),
        "diminisher_neg": ("a little", "rather", "kind of", "mildly"),
        "middle": ("now that I think about it", "given my history with this genre",
                   "having watched it on a rainy Sunday", "from where I was sitting",
                   "as a fan of the original book", "after reading about the production"),
        "name": ("Ana", "David", "Mei", "Omar", "Chloe", "Ravi", "Hannah", "Lucas", "Yuki", "Tariq",
                 "Elena", "Samuel"),
        "city": ("Chicago", "Lisbon", "Nairobi", "Seoul", "Sydney", "Dublin"),
    },
    "templates": {
        "vocabulary": (
            ("both", "I found the {aspect} {s_adj}."),
            ("both", "Honestly, the {work} was {s_adj}."),
            ("both", "We {s_verbed} the {aspect}."),
            ("both", "The {work} turned out to be a {s_noun}."),
            ("both", "I thought the {aspect} was {s_adj}."),
        ),
        "negated_positive": (
            ("negative", "Nothing about the {aspect} was {not_pos}."),
            ("negative", "I can't say the {aspect} was {not_pos}."),
            ("negative", "The {work} never manages to be {not_pos}."),
            ("negative", "I did not {verb_pos} the {aspect} at all."),
            ("negative", "Neither the {aspect} nor the {aspect_2} was {not_pos}."),
        ),
        "negated_negative": (
            ("positive", "There was nothing {not_neg} about the {aspect}."),
            ("positive", "At no point did the {work} feel {not_neg}."),
            ("positive", "The {aspect} is not {not_neg} in the slightest."),
            ("positive", "Neither the {aspect} nor the {aspect_2} felt {not_neg}."),
        ),
        "negation_neutral_middle": (
            ("negative", "Nobody could say, {middle}, that the {aspect} was {not_pos}."),
            ("negative", "I did not, {middle}, find the {work} {not_pos}."),
            ("positive", "At no point, {middle}, did the {aspect} feel {not_neg}."),
            ("positive", "I did not, {middle}, find the {work} {not_neg} in the slightest."),
        ),
        "used_to_but_now": (
            ("both", "At first I thought the {aspect} was {o_adj}, but now I think it is {s_adj}."),
            ("both", "Years ago I {o_verbed} this {work}, but now I {s_verb} it."),
            ("both", "The {aspect} used to seem {o_adj} to me, but now it seems {s_adj}."),
        ),
        "contrast_but": (
            ("both", "Sure, the {aspect} was {o_adj}, but I {s_verbed} this {work} anyway."),
            ("both", "The {aspect} may be {o_adj}, but the {work} as a whole is {s_adj}."),
        ),
        "intensifiers": (
            ("both", "I found the {aspect} {intensifier} {s_grad}."),
            ("both", "What a {ext_intensifier} {s_ext} {work}!"),
            ("both", "We {verb_intensifier} {s_verbed} the {aspect}."),
        ),
        "diminishers": (
            ("both", "The {aspect} felt {s_diminisher} {s_grad}."),
            ("both", "Overall, the {work} was {s_diminisher} {s_grad}."),
        ),
        "names": (
            ("both", "I saw the {work} in {city} with {name}, and the {aspect} was {s_adj}."),
            ("both", "{name} thinks this {work} is {s_adj}, and so do I."),
            ("both", "According to {name}, the {aspect} is {s_adj}, and {name_2} agrees."),
            ("both", "{name} and {name_2} {s_verbed} the {work}, and so did I."),
        ),
    },
}
# fmt: on

PARTS = {"dev": DEV, "test": TEST}
