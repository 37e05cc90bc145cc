"""Original path of the standard dataset loaders."""
from ..datasets import (STANDARD_LOADERS, agnews, basic_datasets_loader, financial_phrasebank, glue_sst2, hate_speech_18,  # noqa: F401
                        load_standard_dataset, rotten_tomatoes, sst5, subjective, trec, tweet_eval_emotion,
                        tweet_eval_hate, un_reducted_agnews, un_reducted_sst5, un_reducted_trec,
                        un_reducted_tweet_eval_emotion)
