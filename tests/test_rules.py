"""The re-read rules: tables of questions and answers that must (and must not) fire.

The questions are written for these tests, in the forms people use with a
chat assistant; none is taken from a benchmark.
"""

from __future__ import annotations

import pytest

from memstore.rules import asks_for_advice, asks_for_recall, declines

ADVICE = [
    "Can you recommend a hotel?",
    "Can you recommend a hotel near the station for my trip to Porto?",
    "Could you suggest some board games for a family evening?",
    "Could you please suggest a few podcasts about history?",
    "Would you recommend a good beginner camera?",
    "Can you give me some ideas for a birthday present for my dad?",
    "Can you help me choose a name for my sourdough starter?",
    "Any tips for keeping basil alive indoors?",
    "My garden is getting out of control. Any advice?",
    "I'm hosting friends on Saturday, any suggestions for snacks?",
    "Do you have any recommendations for a weekend hike?",
    "Do you have any helpful tips for jet lag?",
    "I've got a free evening, any movie recommendations?",
    "What should I cook tonight?",
    "What should I pack for a week in Iceland?",
    "Which laptop should I buy for photo editing?",
    "Where should I go for my anniversary dinner?",
    "Should I repaint the living room this spring?",
    "I'm torn between two job offers. What would you recommend?",
    "Which of the two bikes would you choose?",
    "Do you think I should learn the cello or the viola?",
    "What do you think about switching to a standing desk?",
    "What's your opinion on running before breakfast?",
    "I'd love your thoughts on my plan to move to Lyon.",
    "Recommend a good fantasy novel.",
    "Suggest some easy weeknight recipes.",
    "I'm looking for some ideas to decorate my balcony.",
    "I need some advice on training my puppy.",
    "What are some good ways to save for a house?",
    "What are some fun things to do in Edinburgh?",
    "How can I improve my sleep?",
    "How should I prepare for the marathon in October?",
    "Is it a good idea to adopt a second cat?",
    "I keep forgetting to water my plants; could you help me plan a routine?",
]

NOT_ADVICE = [
    "What did you recommend?",
    "Which hotel did you suggest for Porto?",
    "What were the podcasts you recommended last time?",
    "Can you remind me of the tips you gave me for basil?",
    "In our previous chat you suggested a few board games. What was the third one?",
    "What was the name of the restaurant you recommended?",
    "How many tips did my coach give me last week?",
    "What advice did my doctor give me about sleep?",
    "What did I name my kitten?",
    "When did I start my new job?",
    "How many books did I read in March?",
    "Where do I live now?",
    "How long have I been learning Spanish?",
    "Which city did I visit first, Rome or Paris?",
    "What is my sister's favourite colour?",
    "How much did I spend on the bike repair?",
    "Did I mention which tiles I liked in Lisbon?",
    "What was the recipe you shared for banana bread?",
    "Did you tell me how long to rest the dough?",
    "Have you listed the museums in Porto before?",
    "What time did the concert start?",
    "What did I say my budget for the trip was?",
    "Which suggestion did I end up following for the garden?",
    "How many ideas for the party did I come up with?",
    "What is the name of the yoga studio I joined?",
    "How many days passed between my two vet visits?",
    "What did we decide about the wedding venue?",
    "I told you what my daughter wanted for her birthday. What was it?",
    "What was my old address before I moved?",
    "How often do I go swimming?",
]

RECALL = [
    "What did you recommend?",
    "Which hotel did you suggest for Porto?",
    "What were the podcasts you recommended last time?",
    "Can you remind me of the tips you gave me for basil?",
    "In our previous chat you suggested a few board games. What was the third one?",
    "What was the name of the restaurant you recommended?",
    "What was the recipe you shared for banana bread?",
    "Did you tell me how long to rest the dough?",
    "Have you listed the museums in Porto before?",
    "You told me about a stretching routine; what was the second exercise?",
    "What did you say the capital of Mongolia was when we talked about travel?",
    "I remember you came up with a slogan for my bakery. What was it?",
    "What was the poem you wrote for my mum's birthday?",
    "In our last conversation, what song did you mention?",
    "What did we talk about regarding my cover letter?",
    "Which of the three laptops did you pick as the best value?",
    "What colour scheme had you proposed for the nursery?",
    "Can you repeat the itinerary you created for Kyoto?",
    "What was your recommendation for the lamb marinade?",
    "Which book did you advise me to read first?",
    "Earlier you explained how sourdough rises. What temperature did you say?",
    "What did you name the character in the story you wrote for me?",
    "What exact steps did you provide for resetting my router?",
    "How many items were on the packing list you gave me?",
    "What was the third tip you offered about saving money?",
    "Did you suggest Chorlton or Didsbury for cycling?",
    "Remind me which stretches you described for my lower back.",
    "What was the title you made up for my blog post?",
    "Which wine did you recommend with the risotto?",
    "What did you tell me about the opening hours of the museum?",
]

NOT_RECALL = [
    "Can you recommend a hotel?",
    "Could you suggest some board games for a family evening?",
    "Any tips for keeping basil alive indoors?",
    "What should I cook tonight?",
    "Do you think I should learn the cello or the viola?",
    "What did I name my kitten?",
    "When did I start my new job?",
    "How many books did I read in March?",
    "Where do I live now?",
    "How long have I been learning Spanish?",
    "What is my sister's favourite colour?",
    "How much did I spend on the bike repair?",
    "Did I mention which tiles I liked in Lisbon?",
    "What time did the concert start?",
    "What did I say my budget for the trip was?",
    "Which suggestion did I end up following for the garden?",
    "How many tips did my coach give me last week?",
    "What advice did my doctor give me about sleep?",
    "What is the name of the yoga studio I joined?",
    "How many days passed between my two vet visits?",
    "What was my old address before I moved?",
    "How often do I go swimming?",
    "Which city did I visit first, Rome or Paris?",
    "What did my manager say about the promotion?",
    "What kind of cake did I bake for the office party?",
    "How many hours did I volunteer in total?",
    "Can you help me choose a name for my sourdough starter?",
    "What's your opinion on running before breakfast?",
    "Which laptop should I buy for photo editing?",
    "What are some fun things to do in Edinburgh?",
]

DECLINES = [
    "I don't have information about your sister's birthday.",
    "I don't have any information about a trip to Rome.",
    "I don't have enough information to answer that.",
    "I do not have specific details about the price you paid.",
    "I couldn't find any mention of a second cat in our conversations.",
    "I could not find that in the history.",
    "I can't determine how many books you read from what you've told me.",
    "I cannot answer that based on the available conversation history.",
    "I'm unable to find a record of that purchase.",
    "I am not able to tell which one you chose.",
    "There is no mention of a yoga studio in the conversation history.",
    "There's no information about your commute.",
    "There was no record of a vet visit in April.",
    "No information about your old address is available.",
    "The conversation history does not mention a bike repair.",
    "Our chats don't include anything about your daughter's school.",
    "The messages do not specify the time of the concert.",
    "Your messages never say which city you visited first.",
    "The memory doesn't contain the answer to this question.",
    "That detail isn't mentioned in the history.",
    "The name of the studio is not specified in our conversations.",
    "There is not enough information to work out the total.",
    "It is unclear from the conversation how long you have been learning Spanish.",
    "It's not clear from the history when you started.",
    "You haven't mentioned anything about a marathon.",
    "You never told me anything about your grandmother's recipe.",
    "You didn't mention any trip to Japan.",
    "I don't know what you named your kitten.",
    "I don't know.",
    "Based on our conversations, I have no record of you adopting a dog.",
    "I found no mention of a piano in your messages.",
    "Unfortunately, I don't see any details about the wedding venue.",
]

ANSWERS = [
    "You don't have to decide now, but Chorlton is a good fit for cycling.",
    "I don't know if you'd like spicy food, but the lamb marinade works well with mild chili.",
    "There is no need to rush: your kitten's booster is due on April 10.",
    "You didn't mention the colour, but your kitten Pixel is a grey tabby.",
    "It doesn't matter which one you choose; both neighbourhoods have cycle lanes.",
    "You can't go wrong with a day trip to Sintra.",
    "There's no better time than May to visit Lisbon.",
    "I can't wait to hear how the trip goes! You fly out on May 12.",
    "I cannot recommend the tile museum enough; you said you loved the tiles.",
    "Your budget is about 1,500 euros each, flights included.",
    "You named her Pixel.",
    "You started at Northwind on April 22, after moving from Leeds to Manchester.",
    "Three books: two in March and one in April.",
    "You read four books in total.",
    "No, you haven't been to Lisbon before; this May trip is your first.",
    "You never mentioned liking jazz, so I'd suggest the folk festival you talked about.",
    "The museum does not include Sintra, but the day trip is easy by train.",
    "If you don't have time for a full workout, try the ten-minute routine.",
    "Since you don't have a car, the tram is the easiest option.",
    "Based on your messages, you moved to Manchester in April 2024.",
    "It took you 18 days to finish the puzzle.",
    "The second exercise was a hamstring stretch held for 30 seconds.",
    "Your sister's favourite colour is green.",
    "You mentioned the concert started at 8 pm.",
    "You changed your plan: the latest is Porto, not Lisbon.",
    "Here are three hotel ideas near the station that fit your budget.",
    "I know you dislike crowds, so go early in the morning.",
    "You told me you don't like cilantro, so skip the salsa verde.",
    "The history shows you paid 40 euros for the repair.",
    "No other trips are mentioned besides Lisbon and Porto, so the answer is two.",
    "Not sure it matters, but your vet is Dr. Shah.",
]


#: (rule, table, whether it must fire): each rule against what must and must not trigger it.
TABLES = [
    (asks_for_advice, ADVICE, True),
    (asks_for_advice, NOT_ADVICE, False),
    (asks_for_recall, RECALL, True),
    (asks_for_recall, NOT_RECALL, False),
    (declines, DECLINES, True),
    (declines, ANSWERS, False),
]


@pytest.mark.parametrize(
    "rule, text, fires",
    [(rule, text, fires) for rule, table, fires in TABLES for text in table],
    ids=lambda v: v.__name__ if callable(v) else None,
)
def test_rule_table(rule, text: str, fires: bool) -> None:
    assert bool(rule(text)) is fires


def test_tables_are_large_enough() -> None:
    for _, table, _ in TABLES:
        assert len(table) >= 30


def test_curly_apostrophes_count_as_straight() -> None:
    assert declines("I don\u2019t have any information about that.")
    assert not declines("You don\u2019t have to decide now, but Chorlton suits you.")
    assert asks_for_advice("What\u2019s your opinion on night trains?")
