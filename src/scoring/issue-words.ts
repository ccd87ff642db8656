/**
 * What each problem code of a submission means, in English and Russian side by side: the words a Russian page or
 * report shows for a validation line (issue #63, item 5). The English message of a line (`SubmissionIssue.message`)
 * stays the command line's and the API's, with the values it names; a Russian page says the code's meaning in
 * Russian, keeps the code visible, and shows the values (ids, labels, expected and found) as code.
 */
import type { IssueCode, SubmissionIssue } from './issues.js';

/** Every code's meaning; `Record<IssueCode, …>` so that a new code without its words does not compile. */
export const ISSUE_WORDS: Readonly<Record<IssueCode, { en: string; ru: string }>> = {
  SUBMISSION_NOT_FOUND: { en: 'no such file or folder', ru: 'нет такого файла или папки' },
  BAD_ZIP: { en: 'the archive cannot be read as a zip', ru: 'архив не читается как zip' },
  BAD_ZIP_LAYOUT: {
    en: 'the zip must hold <Task>.jsonl files at its root or inside one folder',
    ru: 'в архиве файлы задач должны лежать в корне или в одной папке',
  },
  UNKNOWN_TASK_FILE: { en: 'the file names no task', ru: 'имя файла не называет ни одной задачи' },
  IGNORED_FILE: { en: 'not a task file; ignored', ru: 'не файл задачи; пропущен' },
  EMPTY_FILE: { en: 'the file has no records', ru: 'в файле нет записей' },
  MALFORMED_JSON: { en: 'the line is not valid JSON', ru: 'строка — не корректный JSON' },
  NOT_JSONL: {
    en: 'the file is in another format, not one JSON object per line',
    ru: 'файл в другом формате, а не по одному объекту JSON на строку',
  },
  NOT_AN_OBJECT: { en: 'the line is not a JSON object', ru: 'строка — не объект JSON' },
  MISSING_ID: { en: 'the record has no id', ru: 'у записи нет идентификатора' },
  DUPLICATE_ID: { en: 'the id was given before', ru: 'этот идентификатор уже встречался' },
  UNKNOWN_ID: { en: 'the id is not an item of the split', ru: 'такого примера нет в наборе' },
  MISSING_ITEM: { en: 'no prediction for an item of the split', ru: 'нет предсказания для примера набора' },
  MISSING_PREDICTION: { en: 'no prediction in the record', ru: 'в записи нет предсказания' },
  MIXED_FORMAT: {
    en: 'a line in another format than the file’s',
    ru: 'строка в другом формате, чем остальной файл',
  },
  WRONG_TYPE: { en: 'the answer has the wrong type', ru: 'ответ не того типа' },
  EMPTY_PREDICTION: { en: 'the answer is empty', ru: 'ответ пуст' },
  UNKNOWN_LABEL: { en: 'the label is outside the label space', ru: 'такой метки нет среди меток задачи' },
  TOO_MANY_PREDICTIONS: {
    en: 'the ranked list is too long',
    ru: 'в ранжированном списке слишком много меток',
  },
  DUPLICATE_PREDICTION: { en: 'the list repeats a label', ru: 'метка в списке повторяется' },
  NER_LENGTH_MISMATCH: {
    en: 'the number of tags differs from the number of tokens',
    ru: 'число тегов не совпадает с числом токенов',
  },
  INVALID_GOLD: {
    en: 'the gold answer is missing or invalid',
    ru: 'верный ответ отсутствует или некорректен',
  },
  GOLD_MISMATCH: {
    en: 'the gold in the file differs from the split’s',
    ru: 'верный ответ в файле отличается от ответа набора',
  },
  NO_REFERENCE_DATA: { en: 'no reference data to score against', ru: 'нет эталонных данных для оценки' },
  NO_GOLD: {
    en: 'no gold here: validated, not scored',
    ru: 'эталона здесь нет: файл проверен, но не оценён',
  },
  PLATFORM_ONLY_TASK: {
    en: 'a task of the MedBench platform that this board does not hold; not scored',
    ru: 'задача платформы MedBench, которой нет на этой доске; не оценена',
  },
  LABEL_OUTSIDE_TRAIN: {
    en: 'predicted labels that never occur in train',
    ru: 'предсказаны метки, которых нет в обучающем наборе',
  },
  MISSING_TASK: { en: 'the task is not in the submission', ru: 'этой задачи нет в загрузке' },
  TASK_NOT_RANKED: {
    en: 'the task is not ranked: the files do not answer the same items',
    ru: 'задача не ранжируется: файлы отвечают не на одни и те же примеры',
  },
  DATA_VERSION_HINT: {
    en: 'the ids may answer another release of the split',
    ru: 'идентификаторы, возможно, из другой версии набора',
  },
  FILE_GOLD_IGNORED: {
    en: 'the file’s gold field was ignored: a closed test is scored on its organisers’ gold',
    ru: 'поле верного ответа в файле пропущено: закрытый тест оценивается по эталону организаторов',
  },
  UNANSWERED_ITEMS: {
    en: 'items without an answer: a closed test is scored only when every item is answered',
    ru: 'есть примеры без ответа: закрытый тест оценивается, только когда отвечены все',
  },
  UPLOAD_TOO_LARGE: { en: 'the upload is too large', ru: 'загрузка слишком велика' },
  TOO_MANY_FILES: { en: 'too many files in the upload', ru: 'в загрузке слишком много файлов' },
  BAD_FILE_NAME: { en: 'the file’s name is not allowed', ru: 'недопустимое имя файла' },
  DUPLICATE_FILE: { en: 'the same task’s file twice', ru: 'файл одной и той же задачи дважды' },
  NESTED_ARCHIVE: { en: 'an archive inside the archive', ru: 'архив внутри архива' },
  ZIP_BOMB: {
    en: 'the archive unpacks to far more than its size',
    ru: 'архив распаковывается во много раз больше своего размера',
  },
  BAD_ENCODING: { en: 'the file is not UTF-8 text', ru: 'файл — не текст в кодировке UTF-8' },
  LINE_TOO_LONG: { en: 'a line is too long', ru: 'слишком длинная строка' },
  TOO_MANY_LINES: { en: 'the file has too many lines', ru: 'в файле слишком много строк' },
  NO_FILES: { en: 'no task file in the upload', ru: 'в загрузке нет файлов задач' },
  NOTHING_SCORED: { en: 'no task could be scored', ru: 'ни одну задачу не удалось оценить' },
  WRONG_BOARD: {
    en: 'the files do not belong to the board asked for, or the board cannot be told',
    ru: 'файлы не относятся к выбранной доске, или доску нельзя определить по ним',
  },
  CLOSED_INCOMPLETE: {
    en: 'a hidden task is missing: no score on hidden gold is released',
    ru: 'не хватает скрытой задачи: балл по скрытому эталону не публикуется',
  },
  HELD_GOLD_AFTER_UPLOAD: {
    en: 'stored before the board held the task’s hidden gold; set aside',
    ru: 'файл сохранён до того, как у доски появился скрытый эталон задачи; отложен',
  },
  CLOSED_QUOTA_USED: {
    en: 'the team’s daily quota on hidden gold is used up',
    ru: 'дневной лимит команды на скрытый эталон исчерпан',
  },
  WRONG_SPLIT: {
    en: 'the ids are of another split of the task',
    ru: 'идентификаторы из другого набора этой задачи',
  },
  LMEVAL_RUN: {
    en: 'the lm-eval folder cannot be read as one run',
    ru: 'папку lm-eval нельзя прочитать как один запуск',
  },
  LMEVAL_PROMPT_MISMATCH: {
    en: 'lm-eval asked the model otherwise than this task does',
    ru: 'lm-eval задавал модели вопрос не так, как эта задача',
  },
  LMEVAL_OTHER_SPLIT: {
    en: 'lm-eval answered another split than test; not scored with the test splits',
    ru: 'lm-eval ответил на другой набор, не тестовый; с тестовыми не оценивается',
  },
};

/** A line's words in a page's language: its own English message, or its code's meaning in Russian. */
export const issueText = (issue: Pick<SubmissionIssue, 'code' | 'message'>, lang: 'en' | 'ru'): string =>
  lang === 'en' ? issue.message : ISSUE_WORDS[issue.code].ru;

/** The words around a line's values, in each language. */
export const ISSUE_FRAME = {
  en: {
    error: 'error',
    warning: 'warning',
    expected: 'expected',
    found: 'found',
    line: 'line',
    lines: 'lines',
    ids: 'ids',
    id: 'id',
    times: (n: number, first: string) => `× ${n}, the first${first}`,
    more: (n: number) => ` and ${n} more`,
  },
  ru: {
    error: 'ошибка',
    warning: 'предупреждение',
    expected: 'ожидалось',
    found: 'найдено',
    line: 'строка',
    lines: 'строки',
    ids: 'идентификаторы',
    id: 'идентификатор',
    times: (n: number, first: string) => `× ${n}, первая${first}`,
    more: (n: number) => ` и ещё ${n}`,
  },
} as const;
